import Foundation

/// Times operations one by one and reports the median: robust against the other work a shared
/// two-core machine does meanwhile.
public enum Timing {
    /// Runs `operation` `warmup` times untimed, then `iterations` times timed.
    /// - Parameters:
    ///   - iterations: How many timed runs.
    ///   - warmup: How many untimed runs first.
    ///   - operation: The work; `index` counts from 0 across the warm-up and the timed runs.
    /// - Returns: The duration of each timed run, in nanoseconds.
    /// - Throws: What `operation` throws.
    public static func samples(
        iterations: Int, warmup: Int, _ operation: (_ index: Int) async throws -> Void
    ) async rethrows -> [UInt64] {
        var samples: [UInt64] = []
        samples.reserveCapacity(iterations)
        for index in 0..<(warmup + iterations) {
            let start = DispatchTime.now().uptimeNanoseconds
            try await operation(index)
            let elapsed = DispatchTime.now().uptimeNanoseconds - start
            if index >= warmup { samples.append(elapsed) }
        }
        return samples
    }

    /// The median of some samples (0 when there are none).
    /// - Parameter samples: Durations in nanoseconds.
    /// - Returns: The middle value.
    public static func median(_ samples: [UInt64]) -> UInt64 {
        guard !samples.isEmpty else { return 0 }
        return samples.sorted()[samples.count / 2]
    }

    /// Monotonic nanoseconds, comparable across processes on the same machine.
    public static var now: UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// What this process holds in memory, from `/proc/self/status`.
public enum ResidentMemory {
    /// The resident set now, in bytes (0 where `/proc` is missing).
    public static var current: Int { field("VmRSS:") }
    /// The largest resident set so far, in bytes.
    public static var peak: Int { field("VmHWM:") }

    private static func field(_ name: String) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            let kilobytes = line.dropFirst(name.count).split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 0
            return kilobytes * 1024
        }
        return 0
    }
}
