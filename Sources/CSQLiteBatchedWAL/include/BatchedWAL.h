#ifndef TOLLGATE_BATCHED_WAL_H
#define TOLLGATE_BATCHED_WAL_H

#include <sqlite3.h>

/// Registers, once, a VFS that forwards everything to the default VFS except how a connection writes
/// its write-ahead log: a transaction's frames reach the file in one `write` call, made when the
/// commit frame arrives, instead of two calls per frame (SQLite writes each frame's 24-byte header,
/// then its page). A commit of five pages makes one system call instead of ten.
///
/// Nothing a reader sees changes: SQLite publishes a commit in the WAL index only after the write of
/// its last frame returns, and that write returns only once every frame before it is in the file.
/// A failed write is reported by the write of the commit frame, so SQLite fails the commit as it would
/// have failed on the frame itself. Only new frames are held: the log's header, frames rewritten in
/// place and checksums rewritten after the commit frame go through at once, in SQLite's order. Reads,
/// syncs, truncations and size queries of the log write out what is held first.
///
/// Returns the VFS's name, to pass to `sqlite3_open_v2`, or NULL when there is no default VFS to
/// wrap or registration failed (the caller then opens with the default VFS).
const char *tollgate_batched_wal_vfs(void);

/// How a connection's write-ahead log was written: `received` write calls from SQLite, `issued`
/// calls made to the file. Returns 0 and leaves both untouched when the connection's log is not
/// open through the batching VFS (not in WAL mode, or another VFS).
int tollgate_batched_wal_counts(sqlite3 *db, sqlite3_int64 *received, sqlite3_int64 *issued);

#endif
