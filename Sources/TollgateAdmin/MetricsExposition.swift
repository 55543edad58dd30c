import Foundation
import Logging
import TollgateCore
import TollgateSQLite

/// `/metrics`: this process's counters and histograms, then the shared state read from the
/// store at this scrape, in the Prometheus text format (version 0.0.4).
public struct MetricsExposition: Sendable {
    /// The `Content-Type` of the text.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// This process's instruments, if it runs a gate (nil for `tollgate serve-admin`).
    public let process: ProcessMetrics?
    /// Reads the shared state.
    public let reader: OperatorsSnapshotReader
    let logger: Logger

    /// Creates an exposition.
    /// - Parameters:
    ///   - process: This process's instruments, if it runs a gate.
    ///   - reader: Reads the shared state.
    ///   - logger: Where a store that cannot be read is logged.
    public init(process: ProcessMetrics?, reader: OperatorsSnapshotReader, logger: Logger = Logger.current) {
        self.process = process
        self.reader = reader
        self.logger = logger
    }

    /// Renders the text. A store that cannot be read gives `tollgate_store_up 0` and this
    /// process's series, not a failed scrape.
    /// - Returns: The text.
    public func render() async -> String {
        var text = process?.render() ?? ""
        if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
        do {
            let (snapshot, forecasts) = try await reader.readForMetrics()
            text += StoreMetrics.render(snapshot, forecasts: forecasts)
        } catch {
            logger.warning("/metrics could not read the store", metadata: ["error": "\(error)"])
            text += StoreMetrics.render(nil, forecasts: [])
        }
        return text
    }
}
