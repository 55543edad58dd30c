import Foundation
import Testing
@testable import Tollgate

@Suite("Process-unique tokens")
struct ProcessUniqueTokenTests {
    @Test("tokens never repeat, across threads, and name this process")
    func neverRepeat() async {
        let tokens = await withTaskGroup(of: [String].self) { group in
            for _ in 0..<4 {
                group.addTask { (0..<1_000).map { _ in ProcessUniqueToken.next() } }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(Set(tokens).count == 4_000)
        let pid = "\(ProcessInfo.processInfo.processIdentifier)-"
        #expect(tokens.allSatisfy { $0.hasPrefix(pid) })
        // The same per-process random part, then the counter: 32 and 16 hex digits.
        let parts = tokens.map { $0.dropFirst(pid.count).split(separator: "-") }
        #expect(parts.allSatisfy { $0.count == 2 && $0[0].count == 32 && $0[1].count == 16 })
        #expect(Set(parts.map { $0[0] }).count == 1)
        // The counter, in lowercase hex: one task's tokens count up.
        let counters = tokens.prefix(1_000).compactMap { token in
            token.split(separator: "-").last.flatMap { UInt64($0, radix: 16) }
        }
        #expect(counters.count == 1_000 && zip(counters, counters.dropFirst()).allSatisfy { $1 > $0 })
        #expect(tokens.allSatisfy { $0.allSatisfy { $0 == "-" || ($0.isHexDigit && !$0.isUppercase) } })
        #expect(CircuitBreaker.newProbeToken() != CircuitBreaker.newProbeToken())
    }
}
