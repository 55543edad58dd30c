/// What ``MaintenanceStorage/vacuum(at:)`` did: the file's size before and after, and the WAL
/// checkpoint that followed.
public struct VacuumResult: Sendable, Hashable, Codable {
    /// Bytes in the database's pages before (page count × page size; the WAL is not counted).
    public var bytesBefore: Int64
    /// Bytes in the database's pages after.
    public var bytesAfter: Int64
    /// Free pages before the vacuum: the space it could give back.
    public var freePagesBefore: Int
    /// Whether the checkpoint could not finish because another connection was reading or writing
    /// (the vacuum itself still happened; a later checkpoint finishes the job).
    public var checkpointBusy: Bool
    /// Frames in the WAL when the checkpoint ran.
    public var walFrames: Int
    /// Frames copied back into the database.
    public var checkpointedFrames: Int

    /// Bytes given back, zero or more.
    public var bytesReclaimed: Int64 { max(bytesBefore - bytesAfter, 0) }

    /// Creates a result.
    /// - Parameters:
    ///   - bytesBefore: Bytes before.
    ///   - bytesAfter: Bytes after.
    ///   - freePagesBefore: Free pages before.
    ///   - checkpointBusy: Whether the checkpoint was blocked.
    ///   - walFrames: Frames in the WAL.
    ///   - checkpointedFrames: Frames checkpointed.
    public init(
        bytesBefore: Int64, bytesAfter: Int64, freePagesBefore: Int, checkpointBusy: Bool, walFrames: Int,
        checkpointedFrames: Int
    ) {
        self.bytesBefore = bytesBefore
        self.bytesAfter = bytesAfter
        self.freePagesBefore = freePagesBefore
        self.checkpointBusy = checkpointBusy
        self.walFrames = walFrames
        self.checkpointedFrames = checkpointedFrames
    }
}
