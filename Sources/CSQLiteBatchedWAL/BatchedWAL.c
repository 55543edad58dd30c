#include "BatchedWAL.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

// The one name it registers under. A process that loads two copies of this code registers once: the
// second finds the name taken and uses the VFS already there, which behaves the same.
static const char batchedWALName[] = "tollgate-batched-wal";

// The most the unix VFS writes in one call: it masks a write's length to 17 bits (os_unix.c,
// seekAndWriteFd) and reports a shorter write as a full disk. Past it, what is held is written out
// before the commit frame (a transaction of more than about 30 pages).
enum { batchedWALLimit = 0x1ffff };

// SQLite's frame header is exactly this long (wal.c, WAL_FRAME_HDRSIZE); the file header is 32 bytes
// and a page at least 512, so a write of this length is a frame header and nothing else.
enum { frameHeaderSize = 24 };

typedef struct BatchedWALFile {
    sqlite3_file base;         // pMethods: batchedWALMethods
    sqlite3_file *log;         // the default VFS's file, allocated right after this struct
    unsigned char *held;       // bytes written by SQLite and not yet by us, contiguous from heldOffset
    sqlite3_int64 heldOffset;
    int heldLength;
    int heldCapacity;
    int pageNext;              // the last write held was a frame's header: its page comes next
    int commitFrameNext;       // ... and that frame is a commit frame: its page ends the transaction
    sqlite3_int64 lastRead;    // the offset of the last read, while no write came after it; -1 otherwise
    int failure;               // the error of a write-out that failed, until the write lock is released
    int injectedFailure;       // for tests: the error the next write-out fails with instead of writing
    struct BatchedDatabaseFile *database;  // the database file whose log this is, when opened through this VFS
    int writesThrough;         // the database file is locked EXCLUSIVE (locking_mode=EXCLUSIVE): hold nothing
    sqlite3_int64 received;
    sqlite3_int64 issued;
} BatchedWALFile;

// A database file opened through this VFS: the default VFS's file, and the log it hands its lock
// releases and barriers to.
typedef struct BatchedDatabaseFile {
    sqlite3_file base;         // pMethods: batchedDatabaseMethods
    sqlite3_file *file;        // the default VFS's file, allocated right after this struct
    BatchedWALFile *log;       // its write-ahead log while that is open
} BatchedDatabaseFile;

static sqlite3_vfs *defaultVFS;
static sqlite3_vfs batchedVFS;
static const sqlite3_io_methods batchedWALMethods;
static const sqlite3_io_methods batchedDatabaseMethods;

// Writes out what is held. A failure is kept and returned by every later call on the log until the
// write lock is released: the frames are lost, and the WAL index of this transaction may already
// name them (SQLite adds a spilled frame to it when it writes the frame), so nothing may commit.
static int writeHeld(BatchedWALFile *file) {
    file->pageNext = 0;
    file->commitFrameNext = 0;
    if (file->failure != SQLITE_OK) return file->failure;
    if (file->heldLength == 0) return SQLITE_OK;
    int length = file->heldLength;
    file->heldLength = 0;
    file->issued += 1;
    int rc = file->injectedFailure;
    file->injectedFailure = SQLITE_OK;
    if (rc == SQLITE_OK) rc = file->log->pMethods->xWrite(file->log, file->held, length, file->heldOffset);
    if (rc != SQLITE_OK) file->failure = rc;
    return rc;
}

// Called as the connection releases the write lock, unlocks its database file or closes its log: what
// is still held then belongs to a transaction that did not commit (a commit writes out everything
// before SQLite publishes it), and must never reach the file after another connection has committed
// frames at the same offsets.
static void discardHeld(BatchedWALFile *file) {
    file->heldLength = 0;
    file->pageNext = 0;
    file->commitFrameNext = 0;
    file->failure = SQLITE_OK;
}

static int batchedClose(sqlite3_file *pFile) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    // Anything still held is uncommitted (see discardHeld).
    discardHeld(file);
    if (file->database) file->database->log = 0;
    int closed = file->log->pMethods->xClose(file->log);
    sqlite3_free(file->held);
    file->held = 0;
    return closed;
}

static int batchedRead(sqlite3_file *pFile, void *buffer, int amount, sqlite3_int64 offset) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    file->lastRead = offset;
    return file->log->pMethods->xRead(file->log, buffer, amount, offset);
}

static int hold(BatchedWALFile *file, const void *bytes, int amount, sqlite3_int64 offset) {
    if (file->heldLength == 0) file->heldOffset = offset;
    int needed = file->heldLength + amount;
    if (needed > file->heldCapacity) {
        int capacity = file->heldCapacity == 0 ? 64 * 1024 : file->heldCapacity;
        while (capacity < needed) capacity *= 2;
        unsigned char *grown = sqlite3_realloc(file->held, capacity);
        if (grown == 0) return SQLITE_NOMEM;
        file->held = grown;
        file->heldCapacity = capacity;
    }
    memcpy(file->held + file->heldLength, bytes, (size_t)amount);
    file->heldLength = needed;
    return SQLITE_OK;
}

static int writeThrough(BatchedWALFile *file, const void *bytes, int amount, sqlite3_int64 offset) {
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    file->issued += 1;
    return file->log->pMethods->xWrite(file->log, bytes, amount, offset);
}

// Only a new frame is held: its 24-byte header, then its page right after it. SQLite writes a frame
// header nowhere else (wal.c, walWriteOneFrame), and always writes the page next. Every other write
// goes through at once, after what is held, in the order SQLite made them: the log's own header, a
// page rewritten in place (a page changed twice in a transaction that spilled), and a checksum
// rewritten after the commit frame (walRewriteChecksums, which reads each frame just before it
// rewrites its header) — the last of those is followed by no call at all before SQLite publishes
// the commit, so holding it would leave the file behind what readers are told.
static int batchedWrite(sqlite3_file *pFile, const void *bytes, int amount, sqlite3_int64 offset) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    file->received += 1;
    if (file->failure != SQLITE_OK) return file->failure;
    if (file->database == 0 || file->writesThrough) return writeThrough(file, bytes, amount, offset);
    sqlite3_int64 lastRead = file->lastRead;
    file->lastRead = -1;
    int heldEndsHere = file->heldLength > 0 && offset == file->heldOffset + file->heldLength;
    int rc;
    if (amount == frameHeaderSize && offset != lastRead) {
        if (file->pageNext || (file->heldLength > 0 && !heldEndsHere)
            || file->heldLength + amount > batchedWALLimit) {
            rc = writeHeld(file);
            if (rc != SQLITE_OK) return rc;
        }
        rc = hold(file, bytes, amount, offset);
        if (rc != SQLITE_OK) return writeThrough(file, bytes, amount, offset);
        // Bytes 4-7 of a frame header: the database's size in pages after a commit, 0 otherwise.
        const unsigned char *header = bytes;
        file->pageNext = 1;
        file->commitFrameNext = (header[4] | header[5] | header[6] | header[7]) != 0;
        return SQLITE_OK;
    }
    if (!(file->pageNext && heldEndsHere) || file->heldLength + amount > batchedWALLimit) {
        return writeThrough(file, bytes, amount, offset);
    }
    int commits = file->commitFrameNext;
    rc = hold(file, bytes, amount, offset);
    if (rc != SQLITE_OK) return writeThrough(file, bytes, amount, offset);
    file->pageNext = 0;
    file->commitFrameNext = 0;
    return commits ? writeHeld(file) : SQLITE_OK;
}

static int batchedTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    return file->log->pMethods->xTruncate(file->log, size);
}

static int batchedSync(sqlite3_file *pFile, int flags) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    return file->log->pMethods->xSync(file->log, flags);
}

static int batchedFileSize(sqlite3_file *pFile, sqlite3_int64 *size) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    return file->log->pMethods->xFileSize(file->log, size);
}

static int batchedLock(sqlite3_file *pFile, int level) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    return file->log->pMethods->xLock(file->log, level);
}

static int batchedUnlock(sqlite3_file *pFile, int level) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    return file->log->pMethods->xUnlock(file->log, level);
}

static int batchedCheckReservedLock(sqlite3_file *pFile, int *reserved) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    return file->log->pMethods->xCheckReservedLock(file->log, reserved);
}

static int batchedFileControl(sqlite3_file *pFile, int operation, void *argument) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    return file->log->pMethods->xFileControl(file->log, operation, argument);
}

static int batchedSectorSize(sqlite3_file *pFile) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    return file->log->pMethods->xSectorSize(file->log);
}

static int batchedDeviceCharacteristics(sqlite3_file *pFile) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    return file->log->pMethods->xDeviceCharacteristics(file->log);
}

// SQLite asks the database file, not its log, for shared memory and mappings; these forward anyway,
// so the log answers exactly as the default VFS's file would.
static int batchedShmMap(sqlite3_file *pFile, int region, int size, int extend, void volatile **mapped) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    if (methods->iVersion < 2 || methods->xShmMap == 0) return SQLITE_IOERR_SHMMAP;
    return methods->xShmMap(file->log, region, size, extend, mapped);
}
static int batchedShmLock(sqlite3_file *pFile, int offset, int count, int flags) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    if (methods->iVersion < 2 || methods->xShmLock == 0) return SQLITE_IOERR_SHMLOCK;
    return methods->xShmLock(file->log, offset, count, flags);
}
static void batchedShmBarrier(sqlite3_file *pFile) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    if (methods->iVersion >= 2 && methods->xShmBarrier) methods->xShmBarrier(file->log);
}
static int batchedShmUnmap(sqlite3_file *pFile, int deleteFlag) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    if (methods->iVersion < 2 || methods->xShmUnmap == 0) return SQLITE_OK;
    return methods->xShmUnmap(file->log, deleteFlag);
}
static int batchedFetch(sqlite3_file *pFile, sqlite3_int64 offset, int amount, void **pointer) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    *pointer = 0;
    if (methods->iVersion < 3 || methods->xFetch == 0) return SQLITE_OK;
    // A mapped read sees the file, so what is held goes to the file first.
    int rc = writeHeld(file);
    if (rc != SQLITE_OK) return rc;
    return methods->xFetch(file->log, offset, amount, pointer);
}
static int batchedUnfetch(sqlite3_file *pFile, sqlite3_int64 offset, void *pointer) {
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    const sqlite3_io_methods *methods = file->log->pMethods;
    if (methods->iVersion < 3 || methods->xUnfetch == 0) return SQLITE_OK;
    return methods->xUnfetch(file->log, offset, pointer);
}

static const sqlite3_io_methods batchedWALMethods = {
    3,
    batchedClose,
    batchedRead,
    batchedWrite,
    batchedTruncate,
    batchedSync,
    batchedFileSize,
    batchedLock,
    batchedUnlock,
    batchedCheckReservedLock,
    batchedFileControl,
    batchedSectorSize,
    batchedDeviceCharacteristics,
    batchedShmMap,
    batchedShmLock,
    batchedShmBarrier,
    batchedShmUnmap,
    batchedFetch,
    batchedUnfetch,
};

static int wrappedFileOffset(void) {
    // The default VFS's file follows ours, aligned as malloc aligns.
    size_t larger = sizeof(BatchedWALFile) > sizeof(BatchedDatabaseFile) ? sizeof(BatchedWALFile) : sizeof(BatchedDatabaseFile);
    return (int)((larger + 15) & ~(size_t)15);
}

// The database file: every call goes to the default VFS's file. Its lock, unlock, WAL-index lock and
// barrier tell the log first (below), and its close unlinks the two.

static int databaseClose(sqlite3_file *pFile) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    if (file->log) file->log->database = 0;
    return file->file->pMethods->xClose(file->file);
}
static int databaseRead(sqlite3_file *pFile, void *buffer, int amount, sqlite3_int64 offset) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xRead(file->file, buffer, amount, offset);
}
static int databaseWrite(sqlite3_file *pFile, const void *bytes, int amount, sqlite3_int64 offset) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xWrite(file->file, bytes, amount, offset);
}
static int databaseTruncate(sqlite3_file *pFile, sqlite3_int64 size) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xTruncate(file->file, size);
}
static int databaseSync(sqlite3_file *pFile, int flags) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xSync(file->file, flags);
}
static int databaseFileSize(sqlite3_file *pFile, sqlite3_int64 *size) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xFileSize(file->file, size);
}
// In WAL mode a connection keeps its database file SHARED while it is open. It locks it EXCLUSIVE
// only in exclusive locking mode, where SQLite takes no WAL-index locks (so the write lock's release
// below never comes), and to leave WAL mode or delete the log: the log is then written through.
static int databaseLock(sqlite3_file *pFile, int level) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    int rc = file->file->pMethods->xLock(file->file, level);
    if (rc == SQLITE_OK && level == SQLITE_LOCK_EXCLUSIVE && file->log) {
        int written = writeHeld(file->log);
        file->log->writesThrough = 1;
        if (written != SQLITE_OK) return written;
    }
    return rc;
}
// The pager unlocks its database file only on leaving exclusive mode, on closing and on changing
// journal mode, never inside a write transaction that will commit: what is held then is uncommitted.
static int databaseUnlock(sqlite3_file *pFile, int level) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    if (file->log) {
        discardHeld(file->log);
        if (level < SQLITE_LOCK_EXCLUSIVE) file->log->writesThrough = 0;
    }
    return file->file->pMethods->xUnlock(file->file, level);
}
static int databaseCheckReservedLock(sqlite3_file *pFile, int *reserved) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xCheckReservedLock(file->file, reserved);
}
static int databaseFileControl(sqlite3_file *pFile, int operation, void *argument) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xFileControl(file->file, operation, argument);
}
static int databaseSectorSize(sqlite3_file *pFile) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xSectorSize(file->file);
}
static int databaseDeviceCharacteristics(sqlite3_file *pFile) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    return file->file->pMethods->xDeviceCharacteristics(file->file);
}
static int databaseShmMap(sqlite3_file *pFile, int region, int size, int extend, void volatile **mapped) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    const sqlite3_io_methods *methods = file->file->pMethods;
    if (methods->iVersion < 2 || methods->xShmMap == 0) return SQLITE_IOERR_SHMMAP;
    return methods->xShmMap(file->file, region, size, extend, mapped);
}

// wal.c's WAL_WRITE_LOCK: the first of the WAL index's locks, held exclusively by the one writer.
enum { walWriteLock = 0 };

static int databaseShmLock(sqlite3_file *pFile, int offset, int count, int flags) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    if (file->log && offset == walWriteLock && count == 1 && flags == (SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE)) {
        // Before another writer can take the lock: a transaction rolled back after spilling frames
        // leaves them held, and written later they would land on that writer's committed frames.
        discardHeld(file->log);
    }
    const sqlite3_io_methods *methods = file->file->pMethods;
    if (methods->iVersion < 2 || methods->xShmLock == 0) return SQLITE_IOERR_SHMLOCK;
    return methods->xShmLock(file->file, offset, count, flags);
}

static void databaseShmBarrier(sqlite3_file *pFile) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    // SQLite publishes a commit between the two copies of the WAL index header, with a barrier
    // between them (walIndexWriteHdr). A commit has written out everything already; should a later
    // SQLite write a frame these rules do not recognise, it goes to the file here, before any reader
    // is told of it. A failure is kept by the log and fails its next call.
    if (file->log) (void)writeHeld(file->log);
    const sqlite3_io_methods *methods = file->file->pMethods;
    if (methods->iVersion >= 2 && methods->xShmBarrier) methods->xShmBarrier(file->file);
}

static int databaseShmUnmap(sqlite3_file *pFile, int deleteFlag) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    const sqlite3_io_methods *methods = file->file->pMethods;
    if (methods->iVersion < 2 || methods->xShmUnmap == 0) return SQLITE_OK;
    return methods->xShmUnmap(file->file, deleteFlag);
}
static int databaseFetch(sqlite3_file *pFile, sqlite3_int64 offset, int amount, void **pointer) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    const sqlite3_io_methods *methods = file->file->pMethods;
    *pointer = 0;
    if (methods->iVersion < 3 || methods->xFetch == 0) return SQLITE_OK;
    return methods->xFetch(file->file, offset, amount, pointer);
}
static int databaseUnfetch(sqlite3_file *pFile, sqlite3_int64 offset, void *pointer) {
    BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
    const sqlite3_io_methods *methods = file->file->pMethods;
    if (methods->iVersion < 3 || methods->xUnfetch == 0) return SQLITE_OK;
    return methods->xUnfetch(file->file, offset, pointer);
}

static const sqlite3_io_methods batchedDatabaseMethods = {
    3,
    databaseClose,
    databaseRead,
    databaseWrite,
    databaseTruncate,
    databaseSync,
    databaseFileSize,
    databaseLock,
    databaseUnlock,
    databaseCheckReservedLock,
    databaseFileControl,
    databaseSectorSize,
    databaseDeviceCharacteristics,
    databaseShmMap,
    databaseShmLock,
    databaseShmBarrier,
    databaseShmUnmap,
    databaseFetch,
    databaseUnfetch,
};

static int batchedOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *pFile, int flags, int *outFlags) {
    (void)vfs;
    sqlite3_file *wrapped = (sqlite3_file *)((unsigned char *)pFile + wrappedFileOffset());
    if (flags & SQLITE_OPEN_MAIN_DB) {
        BatchedDatabaseFile *file = (BatchedDatabaseFile *)pFile;
        memset(file, 0, sizeof(BatchedDatabaseFile));
        file->file = wrapped;
        int rc = defaultVFS->xOpen(defaultVFS, name, wrapped, flags, outFlags);
        if (rc != SQLITE_OK) {
            // SQLite calls xClose only on a file whose pMethods is set.
            if (wrapped->pMethods) wrapped->pMethods->xClose(wrapped);
            file->base.pMethods = 0;
            return rc;
        }
        file->base.pMethods = &batchedDatabaseMethods;
        return SQLITE_OK;
    }
    if ((flags & SQLITE_OPEN_WAL) == 0) {
        // Every other file is the default VFS's own, in the room this VFS asked for.
        return defaultVFS->xOpen(defaultVFS, name, pFile, flags, outFlags);
    }
    BatchedWALFile *file = (BatchedWALFile *)pFile;
    memset(file, 0, sizeof(BatchedWALFile));
    file->log = wrapped;
    file->lastRead = -1;
    int rc = defaultVFS->xOpen(defaultVFS, name, file->log, flags, outFlags);
    if (rc != SQLITE_OK) {
        // SQLite calls xClose only on a file whose pMethods is set.
        if (file->log->pMethods) file->log->pMethods->xClose(file->log);
        file->base.pMethods = 0;
        return rc;
    }
    file->base.pMethods = &batchedWALMethods;
    // The database file SQLite opened this log for: it tells the log when the write lock is
    // released. A log whose database is not ours is written through, never held.
    sqlite3_file *database = sqlite3_database_file_object(name);
    if (database && database->pMethods == &batchedDatabaseMethods) {
        file->database = (BatchedDatabaseFile *)database;
        file->database->log = file;
    }
    return SQLITE_OK;
}

static int batchedDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    return defaultVFS->xDelete(defaultVFS, name, syncDirectory);
}
static int batchedAccess(sqlite3_vfs *vfs, const char *name, int flags, int *result) {
    (void)vfs;
    return defaultVFS->xAccess(defaultVFS, name, flags, result);
}
static int batchedFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return defaultVFS->xFullPathname(defaultVFS, name, size, out);
}
static void *batchedDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return defaultVFS->xDlOpen(defaultVFS, name);
}
static void batchedDlError(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    defaultVFS->xDlError(defaultVFS, size, message);
}
static void (*batchedDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return defaultVFS->xDlSym(defaultVFS, library, symbol);
}
static void batchedDlClose(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    defaultVFS->xDlClose(defaultVFS, library);
}
static int batchedRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return defaultVFS->xRandomness(defaultVFS, size, out);
}
static int batchedSleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return defaultVFS->xSleep(defaultVFS, microseconds);
}
static int batchedCurrentTime(sqlite3_vfs *vfs, double *now) {
    (void)vfs;
    return defaultVFS->xCurrentTime(defaultVFS, now);
}
static int batchedGetLastError(sqlite3_vfs *vfs, int size, char *message) {
    (void)vfs;
    return defaultVFS->xGetLastError ? defaultVFS->xGetLastError(defaultVFS, size, message) : 0;
}
static int batchedCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *now) {
    (void)vfs;
    return defaultVFS->xCurrentTimeInt64(defaultVFS, now);
}

static const char *registeredName;

static void registerBatchedVFS(void) {
    if (sqlite3_vfs_find(batchedWALName)) {
        registeredName = batchedWALName;
        return;
    }
    defaultVFS = sqlite3_vfs_find(0);
    // The methods forwarded past version 1 must be there to forward.
    if (defaultVFS == 0 || defaultVFS->iVersion < 2 || defaultVFS->xCurrentTimeInt64 == 0) return;
    batchedVFS.iVersion = 2;
    batchedVFS.szOsFile = wrappedFileOffset() + defaultVFS->szOsFile;
    batchedVFS.mxPathname = defaultVFS->mxPathname;
    batchedVFS.zName = batchedWALName;
    batchedVFS.xOpen = batchedOpen;
    batchedVFS.xDelete = batchedDelete;
    batchedVFS.xAccess = batchedAccess;
    batchedVFS.xFullPathname = batchedFullPathname;
    batchedVFS.xDlOpen = batchedDlOpen;
    batchedVFS.xDlError = batchedDlError;
    batchedVFS.xDlSym = batchedDlSym;
    batchedVFS.xDlClose = batchedDlClose;
    batchedVFS.xRandomness = batchedRandomness;
    batchedVFS.xSleep = batchedSleep;
    batchedVFS.xCurrentTime = batchedCurrentTime;
    batchedVFS.xGetLastError = batchedGetLastError;
    batchedVFS.xCurrentTimeInt64 = batchedCurrentTimeInt64;
    if (sqlite3_vfs_register(&batchedVFS, 0) == SQLITE_OK) registeredName = batchedWALName;
}

const char *tollgate_batched_wal_vfs(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, registerBatchedVFS);
    return registeredName;
}

int tollgate_batched_wal_counts(sqlite3 *db, sqlite3_int64 *received, sqlite3_int64 *issued) {
    sqlite3_file *log = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log) != SQLITE_OK || log == 0) return 0;
    if (log->pMethods != &batchedWALMethods) return 0;
    BatchedWALFile *file = (BatchedWALFile *)log;
    *received = file->received;
    *issued = file->issued;
    return 1;
}

int tollgate_batched_wal_fail_next_write_out(sqlite3 *db, int errorCode) {
    sqlite3_file *log = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log) != SQLITE_OK || log == 0) return 0;
    if (log->pMethods != &batchedWALMethods) return 0;
    ((BatchedWALFile *)log)->injectedFailure = errorCode;
    return 1;
}
