/// How an endpoint that takes a list of IDs in one parameter is batched: single-ID requests with
/// equal other parameters, headers and options that come together go as one call with up to
/// ``maximum`` IDs, and each caller gets the answer a call for its ID alone would have given (the
/// envelope with only its items), stored under its own cache key.
///
/// Batching waits only where there is concurrency: a request with nothing of its batch on the
/// wire goes at once, alone. Those that arrive while a call is on the wire collect behind it, and
/// go as one call once ``wait`` has passed since the first of them arrived and the call ahead has
/// landed, whichever is later, or at once when ``maximum`` have. Later arrivals never extend the
/// wait.
///
/// YouTube's `videos.list`, `channels.list` and `playlists.list` take up to 50 IDs for one unit:
///
/// ```swift
/// var configuration = GateConfiguration()
/// configuration.batching["videos.list"] = BatchPolicy(parameter: "id", maximum: 50, wait: .milliseconds(10))
/// ```
///
/// In a description file: `batch: {parameter: id, separator: ",", max: 50, items: items, item_key: id, wait: 10ms}`.
public struct BatchPolicy: Sendable, Hashable {
    /// The query parameter that carries the IDs, such as `id`.
    public var parameter: String
    /// What separates IDs in the parameter's value: `,` for YouTube.
    public var separator: String
    /// The most IDs one call may carry; a batch this full is sent at once.
    public var maximum: Int
    /// The field of the answer's JSON object that holds the list of items, such as `items`.
    public var itemsField: String
    /// The field of each item that holds its ID, such as `id`.
    public var itemKey: String
    /// How long a collecting batch stays open after its first request joined it, on the gate's
    /// clock (longer only while a call of its batch ahead of it is still on the wire).
    public var wait: Duration

    /// Creates a policy.
    /// - Parameters:
    ///   - parameter: The query parameter that carries the IDs.
    ///   - separator: What separates IDs in its value; `,` by default.
    ///   - maximum: The most IDs in one call; at least 1.
    ///   - itemsField: The answer's field that lists the items; `items` by default.
    ///   - itemKey: Each item's ID field; `id` by default.
    ///   - wait: How long a batch stays open after its first request joined; 10 ms by default.
    public init(parameter: String = "id", separator: String = ",", maximum: Int = 50, itemsField: String = "items",
                itemKey: String = "id", wait: Duration = .milliseconds(10)) {
        self.parameter = parameter
        self.separator = separator.isEmpty ? "," : separator
        self.maximum = max(1, maximum)
        self.itemsField = itemsField
        self.itemKey = itemKey
        self.wait = max(.zero, wait)
    }

    /// YouTube Data API v3 list methods that take up to 50 comma-separated IDs in `id` for one
    /// unit (`videos.list`, `channels.list`, `playlists.list`), answered in `items` by `id`.
    public static let youTubeList = BatchPolicy(parameter: "id", separator: ",", maximum: 50, itemsField: "items",
                                                itemKey: "id", wait: .milliseconds(10))

    /// The endpoints of the YouTube Data API v3 preset that are batched, with their policy.
    public static let youTubeDataAPIv3: [String: BatchPolicy] = [
        "videos.list": .youTubeList, "channels.list": .youTubeList, "playlists.list": .youTubeList,
    ]
}
