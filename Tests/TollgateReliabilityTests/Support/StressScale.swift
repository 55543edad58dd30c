import Foundation
import TollgateTestSupport

/// How big the stress and crash tests run: `TOLLGATE_STRESS_SCALE=full` for the full
/// numbers, anything else (or nothing) for the CI size that keeps `swift test` fast.
enum StressScale: String, Sendable {
    case ci
    case full

    static let current: StressScale =
        ProcessInfo.processInfo.environment["TOLLGATE_STRESS_SCALE"]?.lowercased() == "full" ? .full : .ci

    /// Workers killed with SIGKILL in the crash test.
    var kills: Int { self == .full ? 220 : 18 }
    /// Admissions each task of each contention process attempts.
    var contentionAdmissionsPerTask: Int { self == .full ? 150 : 25 }
    /// Random inputs per parser in the fuzz tests.
    var fuzzIterations: Int { self == .full ? 100_000 : 3_000 }
}

extension SeededGenerator {
    /// Random bytes biased towards what header parsers care about: separators, quotes, digits,
    /// keywords, whitespace, control bytes and bytes that are not UTF-8.
    mutating func hostileBytes(maximumLength: Int, vocabulary: [String]) -> [UInt8] {
        let length = Int.random(in: 0...maximumLength, using: &self)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        while bytes.count < length {
            switch Int.random(in: 0..<10, using: &self) {
            case 0...3:
                bytes.append(contentsOf: vocabulary.randomElement(using: &self)!.utf8)
            case 4...5:
                bytes.append(Array(",;=\"\\ \t/*-:".utf8).randomElement(using: &self)!)
            case 6:
                bytes.append(UInt8.random(in: 0x30...0x39, using: &self))
            case 7:
                bytes.append(UInt8.random(in: 0x80...0xFF, using: &self))
            case 8:
                bytes.append(UInt8.random(in: 0x00...0x1F, using: &self))
            default:
                bytes.append(UInt8.random(in: 0x20...0x7E, using: &self))
            }
        }
        return Array(bytes.prefix(length))
    }
}

/// Runs blocking work (waiting on processes, sleeping between kills) on a dispatch thread, so it
/// never holds one of Swift concurrency's cooperative threads while other tests run.
func onDispatchThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
    }
}
