import Foundation
import Synchronization

/// Tokens unique across processes and restarts, for rows that say who holds them: a circuit's
/// half-open probe lease and a resource's coalescing lease.
///
/// The process id and 128 random bits drawn once per process keep processes (and restarts) apart;
/// a counter keeps one process's tokens apart. Every admission makes one and almost none is used,
/// so making one costs no system call: no `getrandom`, no process id asked for again, and no
/// `/dev/urandom` opened, read and closed, as `UUID()` does on Linux (the coalescing step of a
/// revalidation took 12 us in situ with a `UUID()` for its lease holder, 3 us without).
enum ProcessUniqueToken {
    /// A new token, such as `4242-<32 hex digits>-000000000000002a`.
    static func next() -> String {
        let counter = issued.add(1, ordering: .relaxed).newValue
        // Written in place: interpolating and padding the counter took three allocations, a
        // tenth of an admission's own Swift.
        return String(unsafeUninitializedCapacity: processNonce.count + 17) { buffer in
            var written = 0
            for byte in processNonce {
                buffer[written] = byte
                written += 1
            }
            buffer[written] = UInt8(ascii: "-")
            written += 1
            writeHex(counter, into: buffer, at: &written)
            return written
        }
    }

    private static let processNonce: [UInt8] = {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        return Array("\(ProcessInfo.processInfo.processIdentifier)-".utf8)
            + [UInt8](unsafeUninitializedCapacity: 32) { buffer, written in
                written = 0
                writeHex(high, into: buffer, at: &written)
                writeHex(low, into: buffer, at: &written)
            }
    }()

    private static let issued = Atomic<UInt64>(0)

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Writes `value` as 16 lowercase hex digits, zero-padded, from `position` on.
    private static func writeHex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at position: inout Int) {
        for shift in stride(from: 60, through: 0, by: -4) {
            buffer[position] = hexDigits[Int((value >> UInt64(shift)) & 0xF)]
            position += 1
        }
    }
}
