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
/// Only new frames are held: the log's header, frames rewritten in place and checksums rewritten after
/// the commit frame go through at once, in SQLite's order. Reads, syncs, truncations and size queries
/// of the log write out what is held first, and so does the barrier SQLite raises as it publishes a
/// commit. What is still held when the connection releases the write lock belongs to a transaction
/// that did not commit (frames it spilled before rolling back) and is dropped, never written over
/// another writer's frames, and so is what is held when the database file is unlocked. In exclusive
/// locking mode (no WAL-index locks) the log is written through. A failed write-out fails that call
/// and every later one on the log until the write lock is released, so the transaction cannot commit
/// without its frames.
///
/// Returns the VFS's name, to pass to `sqlite3_open_v2`, or NULL when there is no default VFS to
/// wrap or registration failed (the caller then opens with the default VFS).
const char *tollgate_batched_wal_vfs(void);

/// How a connection's write-ahead log was written: `received` write calls from SQLite, `issued`
/// calls made to the file. Returns 0 and leaves both untouched when the connection's log is not
/// open through the batching VFS (not in WAL mode, or another VFS).
int tollgate_batched_wal_counts(sqlite3 *db, sqlite3_int64 *received, sqlite3_int64 *issued);

/// For tests: the next time the connection's log writes out what it holds, it fails with `errorCode`
/// instead of writing (as a full disk would). Returns 0 when the log is not open through the batching VFS.
int tollgate_batched_wal_fail_next_write_out(sqlite3 *db, int errorCode);

#endif
