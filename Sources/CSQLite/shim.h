#include <sqlite3.h>

/// `SQLITE_TRANSIENT` is a macro around a function-pointer cast that Swift cannot import.
/// Binding with it makes SQLite copy the bytes before the call returns.
static inline void (*_tollgate_sqlite_transient(void))(void *) {
    return (void (*)(void *))-1;
}
