// The system SQLite3 for the harness's in-situ floor: the bare C API, no Tollgate in between.
#include <sqlite3.h>
