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
    ///
    /// It runs on its caller's executor (`nonisolated(nonsending)`): called from the main actor,
    /// every operation starts on the main actor, as an app's call does; called from a
    /// `@concurrent` function, on the global executor. See ``CallerKind``.
    public nonisolated(nonsending) static func samples(
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

/// Who calls the library: an app's main actor, or a task on the global executor. A library call
/// that hops between executors pays for it only in one of the two, so both are timed.
public enum CallerKind: String, CaseIterable, Sendable {
    /// The main actor, as a SwiftUI view or the top level of a command-line tool calls.
    case mainActor = "main_actor"
    /// A nonisolated task on the global concurrent executor, as a server's request handler calls.
    case nonisolated

    /// Times `operation` as a caller of this kind: the whole loop runs on that executor.
    /// - Parameters:
    ///   - iterations: How many timed runs.
    ///   - warmup: How many untimed runs first.
    ///   - operation: The work, sendable so either executor may run it.
    /// - Returns: The duration of each timed run, in nanoseconds.
    /// - Throws: What `operation` throws.
    public func samples(
        iterations: Int, warmup: Int, _ operation: @escaping @Sendable (_ index: Int) async throws -> Void
    ) async throws -> [UInt64] {
        switch self {
        case .mainActor: try await Self.onMainActor(iterations: iterations, warmup: warmup, operation)
        case .nonisolated: try await Self.onGlobalExecutor(iterations: iterations, warmup: warmup, operation)
        }
    }

    @MainActor
    private static func onMainActor(
        iterations: Int, warmup: Int, _ operation: @escaping @Sendable (_ index: Int) async throws -> Void
    ) async throws -> [UInt64] {
        try await Timing.samples(iterations: iterations, warmup: warmup, operation)
    }

    @concurrent
    private static func onGlobalExecutor(
        iterations: Int, warmup: Int, _ operation: @escaping @Sendable (_ index: Int) async throws -> Void
    ) async throws -> [UInt64] {
        try await Timing.samples(iterations: iterations, warmup: warmup, operation)
    }
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
