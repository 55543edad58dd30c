#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro around a function-pointer cast that Swift cannot import.
/// Binding with it makes SQLite copy the bytes before the call returns.
static inline void (*_tollgate_sqlite_transient(void))(void *) {
    return (void (*)(void *))-1;
}

#include <stdint.h>

/// The connection's own mapping of the first region of its database's WAL index (the `-shm`
/// file), as SQLite maps it for its readers and writers, or NULL when there is none (not in WAL
/// mode, an in-memory database, a VFS without shared memory). It stays mapped while the
/// connection is open. Borrowing SQLite's mapping matters: opening and closing another
/// descriptor on the file would drop every POSIX lock this process holds on it.
static inline const void *_tollgate_wal_index(sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0) return 0;
    const sqlite3_io_methods *methods = file->pMethods;
    if (methods == 0 || methods->iVersion < 2 || methods->xShmMap == 0) return 0;
    volatile void *region = 0;
    if (methods->xShmMap(file, 0, 32768, 0, &region) != SQLITE_OK) return 0;
    return (const void *)region;
}

/// Copies the WAL-index header (the first of the two 48-byte copies at the start of a
/// database's `-shm` file, https://www.sqlite.org/walformat.html) into `out`, as SQLite's own
/// readers check it without a lock: the first copy, a barrier, then the second, which a writer
/// updates first. Returns 0, copying nothing, when the copies differ (a commit is being
/// published) or the header is not initialised.
static inline int _tollgate_wal_index_header(const void *shm, uint32_t out[12]) {
    const volatile uint32_t *first = (const volatile uint32_t *)shm;
    const volatile uint32_t *second = first + 12;
    uint32_t copy[12];
    for (int i = 0; i < 12; i++) copy[i] = first[i];
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int i = 0; i < 12; i++) {
        if (second[i] != copy[i]) return 0;
    }
    // isInit, the first byte of the fourth word.
    if (((const unsigned char *)copy)[12] == 0) return 0;
    for (int i = 0; i < 12; i++) out[i] = copy[i];
    return 1;
}
