import Foundation
import TollgateCore

extension AdmissionTable {
    /// Applies bookkeeping inside the caller's transaction.
    static func record(_ db: Database, _ bookkeeping: AnswerBookkeeping) throws -> AnswerBookkeepingResult {
        let settlement = try bookkeeping.settlement.map { try settle(db, $0) }
        if let release = bookkeeping.leaseRelease {
            try CoalescingLeaseTable.release(db, resourceKey: release.resourceKey, holder: release.holder)
        }
        return AnswerBookkeepingResult(settlement: settlement)
    }
}
