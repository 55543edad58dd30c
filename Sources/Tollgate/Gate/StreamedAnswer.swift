import Foundation
import HTTPTypes

/// An answer's body on its way from the transport to the caller, chunk by chunk as it arrives
/// (DESIGN.md, "Answers flow"): each chunk is handed on at once, kept for the store while the body
/// stays within the cache's limit, and read for the answer's cost. When the body ends — read to
/// its end, failed, cancelled, or dropped by its reader — ``Ending`` is reported once, and the
/// gate settles the attempt (and stores the body, when it came whole) then.
///
/// `@unchecked Sendable`: the body is read by one task at a time, each `next()` awaited before the
/// following one (``HTTPBodyStream``'s contract), so no two accesses to its state overlap; the
/// end is reported from `next()` or, when the reader dropped the stream, from `deinit`, when no
/// one else holds it.
final class StreamedAnswer: @unchecked Sendable {
    /// How the body ended.
    struct Ending: Sendable {
        /// The body came to its end (and to its announced length, when it had one).
        var complete: Bool
        /// The whole body, when it came complete within the limit it was kept to.
        var body: Data?
        /// The cost the body reported, the last report wins; nil when it told none.
        var reportedCost: Int?
        /// Why it ended early, when it did.
        var cutShort: String?
    }

    private var upstream: HTTPBodyStream.AsyncIterator
    private var kept: Data?
    private let keepLimit: Int
    private let announcedLength: Int?
    private var received = 0
    private var costReader: StreamedCostReader?
    private var onEnd: (@Sendable (Ending) -> Void)?
    /// The body reached its announced length, and its end was reported with its last chunk: the
    /// transport's end of body is still to be read.
    private var endedAtLength = false

    /// Starts passing a body on.
    /// - Parameters:
    ///   - upstream: The body as the transport reads it.
    ///   - keepingUpTo: The largest body kept for the store; nil keeps none.
    ///   - announcedLength: The answer's `Content-Length`, when it gave one.
    ///   - costReader: Reads the answer's cost as the body passes, when it has one to read.
    ///   - onEnd: Told once how the body ended.
    init(
        _ upstream: HTTPBodyStream, keepingUpTo keepLimit: Int?, announcedLength: Int?,
        costReader: StreamedCostReader?, onEnd: @escaping @Sendable (Ending) -> Void
    ) {
        self.upstream = upstream.makeAsyncIterator()
        self.keepLimit = keepLimit ?? 0
        self.kept = keepLimit == nil ? nil : Data()
        self.announcedLength = announcedLength
        self.costReader = costReader
        self.onEnd = onEnd
    }

    deinit {
        end(complete: false, cutShort: "the reader stopped reading before the end")
    }

    /// The body for the caller.
    var body: HTTPBodyStream {
        HTTPBodyStream { try await self.next() }
    }

    /// The next chunk, or nil at the end.
    ///
    /// A body with a length ends with its last byte: its end is reported before that last chunk
    /// is handed on, so a reader that asks again as soon as it has the whole body (a proxy's
    /// client sending the same request) finds the store's write already queued.
    func next() async throws -> Data? {
        guard onEnd != nil else {
            if endedAtLength {
                // The transport's own end, read so that it can keep the connection.
                endedAtLength = false
                _ = try? await upstream.next()
            }
            return nil
        }
        let chunk: Data?
        do {
            chunk = try await upstream.next()
        } catch {
            end(complete: false, cutShort: error is CancellationError ? "cancelled: the reader has gone" : "\(error)")
            throw error
        }
        guard let chunk else {
            if Task.isCancelled {
                // A transport may end a cancelled read as if the body had ended: it did not.
                end(complete: false, cutShort: "cancelled: the reader has gone")
                throw CancellationError()
            }
            let whole = announcedLength.map { $0 == received } ?? true
            end(complete: whole, cutShort: whole ? nil : "\(received) of the \(announcedLength ?? 0) bytes announced")
            return nil
        }
        received += chunk.count
        if kept != nil {
            if received > keepLimit {
                kept = nil
            } else {
                kept?.append(chunk)
            }
        }
        costReader?.consume(chunk)
        if let announcedLength, received == announcedLength {
            endedAtLength = true
            end(complete: true, cutShort: nil)
        }
        return chunk
    }

    private func end(complete: Bool, cutShort: String?) {
        guard let onEnd else { return }
        self.onEnd = nil
        let reported = costReader?.finish()
        onEnd(Ending(complete: complete, body: complete ? kept : nil, reportedCost: reported, cutShort: cutShort))
        kept = nil
    }
}
