/*
 * The SQLite floor: what the bare C API costs on this machine, with the settings Tollgate uses
 * (a file in WAL mode, synchronous = NORMAL, a 5 s busy timeout).
 *
 *   floor txn ITERATIONS DIR            BEGIN IMMEDIATE; UPDATE one row; COMMIT
 *   floor blob ITERATIONS DIR           read a 10 KiB blob by primary key
 *   floor upsert ITERATIONS DIR         BEGIN IMMEDIATE; upsert a 10 KiB blob by a text key into a
 *                                       table with one index (1,000 rows, so it replaces); COMMIT:
 *                                       what a cache store at capacity cannot do with less
 *   floor statements ITERATIONS FILE    the statements of Tollgate's admission, as SQLiteStore issues them
 *                                       in a burst (their text copied from the Swift sources), on a file the
 *                                       harness's admission run left: Tollgate's schema and rows, no Swift.
 *                                       What the admission's SQL costs by itself, so that the rest is
 *                                       Tollgate's own
 *   floor store-statements ITERATIONS FILE
 *                                       the same for a cache store at capacity: its statements as
 *                                       SQLiteStore issues them, on the file the harness's store run
 *                                       left (1,000 entries), each store taking over the least recently
 *                                       used entry's rows with a new key and a new 10 KiB body
 *   floor design-admission ITERATIONS DIR
 *                                       the least an admission can write under DESIGN.md's rules, in
 *                                       trivial statements on tables of its own: a charge event appended,
 *                                       the day's total and the throttle's counter updated (three pages);
 *                                       no reads, no checks. What the ledger's rules cost before any of
 *                                       Tollgate's SQL or Swift
 *   floor design-store ITERATIONS DIR   the least a cache store at capacity can write under DESIGN.md's
 *                                       rules: metadata and body in separate tables, the LRU order and
 *                                       the key indexed, the least recently used entry taken over in
 *                                       place with a new key and a new 10 KiB body (1,000 entries)
 *   floor contention PROCS ITERATIONS DIR
 *                                       PROCS processes each doing ITERATIONS bare transactions
 *                                       on one file; prints aggregate throughput
 *
 * Each timed operation is measured on its own and the median is printed, as
 * `RESULT <name> <nanoseconds>`, the format compare.sh reads.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fprintf(stderr, "floor: %s: %s (%d)\n", what, db ? sqlite3_errmsg(db) : "", rc);
        exit(1);
    }
}

static void exec(sqlite3 *db, const char *sql) {
    char *message = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        fprintf(stderr, "floor: %s: %s\n", sql, message);
        exit(1);
    }
}

static sqlite3 *open_file(const char *path);

/* Opens (or creates) the floor's own file `name` in `dir`. */
static sqlite3 *open_in(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return open_file(path);
}

/* Built with FLOOR_BATCHED_WAL and Sources/CSQLiteBatchedWAL, the floors open their files through the
 * VFS Tollgate opens its own with (each transaction's log frames in one write) and name their results
 * `….batched_wal`: the same SQL, written to the log as Tollgate writes it. */
#ifdef FLOOR_BATCHED_WAL
#include "BatchedWAL.h"
static const char *floor_vfs(void) { return tollgate_batched_wal_vfs(); }
static const char result_suffix[] = ".batched_wal";
#else
static const char *floor_vfs(void) { return NULL; }
static const char result_suffix[] = "";
#endif

static sqlite3 *open_file(const char *path) {
    sqlite3 *db = NULL;
    check(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, floor_vfs()), db, "open");
    sqlite3_busy_timeout(db, 5000);
    exec(db, "PRAGMA journal_mode = WAL");
    exec(db, "PRAGMA synchronous = NORMAL");
    return db;
}

static int compare_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* A prepared statement; exits, naming the SQL, when SQLite cannot prepare it. */
static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = NULL;
    check(sqlite3_prepare_v2(db, sql, -1, &statement, NULL), db, sql);
    return statement;
}

/* `size` bytes of a fixed pattern: the bodies every floor writes or reads. */
static unsigned char *new_payload(int size) {
    unsigned char *payload = malloc((size_t)size);
    for (int i = 0; i < size; i++) payload[i] = (unsigned char)(i * 31 + 7);
    return payload;
}

static long long median(long long *samples, int count) {
    qsort(samples, (size_t)count, sizeof(long long), compare_ll);
    return samples[count / 2];
}

/* Steps statements[from..<count] in order, each to its end; exits on an error, naming its SQL. */
static void step_each(sqlite3 *db, sqlite3_stmt **statements, int from, int count) {
    for (int s = from; s < count; s++) {
        int rc;
        while ((rc = sqlite3_step(statements[s])) == SQLITE_ROW) {}
        check(rc, db, sqlite3_sql(statements[s]));
        sqlite3_reset(statements[s]);
    }
}

/* Finalizes a transaction floor's statements and closes its connection. */
static void finish(sqlite3 *db, sqlite3_stmt *begin, sqlite3_stmt *commit, sqlite3_stmt **statements, int count) {
    for (int s = 0; s < count; s++) sqlite3_finalize(statements[s]);
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_close(db);
}

/* Prints a floor's median as compare.sh reads it, and frees its samples. */
static void report(const char *name, long long *samples, int count) {
    printf("RESULT %s%s %lld\n", name, result_suffix, median(samples, count));
    free(samples);
}

/* One bare transaction; returns the number of SQLITE_BUSY results seen (0 when it went through). */
static int bare_transaction(sqlite3 *db, sqlite3_stmt *begin, sqlite3_stmt *update, sqlite3_stmt *commit) {
    int rc = sqlite3_step(begin);
    sqlite3_reset(begin);
    if (rc == SQLITE_BUSY) return 1;
    check(rc, db, "BEGIN IMMEDIATE");
    check(sqlite3_step(update), db, "UPDATE");
    sqlite3_reset(update);
    check(sqlite3_step(commit), db, "COMMIT");
    sqlite3_reset(commit);
    return 0;
}

static void prepare_counter(const char *path) {
    sqlite3 *db = open_file(path);
    exec(db, "CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
    exec(db, "INSERT OR IGNORE INTO counter (id, n) VALUES (1, 0)");
    sqlite3_close(db);
}

static int run_transactions(const char *path, int iterations, long long *samples) {
    sqlite3 *db = open_file(path);
    sqlite3_stmt *begin, *update, *commit;
    begin = prepare(db, "BEGIN IMMEDIATE");
    update = prepare(db, "UPDATE counter SET n = n + 1 WHERE id = 1");
    commit = prepare(db, "COMMIT");
    int busy = 0;
    for (int i = 0; i < iterations; i++) {
        long long start = now_ns();
        busy += bare_transaction(db, begin, update, commit);
        if (samples) samples[i] = now_ns() - start;
    }
    sqlite3_finalize(begin);
    sqlite3_finalize(update);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    return busy;
}

static void txn(int iterations, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/floor-txn.sqlite", dir);
    prepare_counter(path);
    run_transactions(path, iterations / 10 + 1, NULL); /* warm up */
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    run_transactions(path, iterations, samples);
    report("floor.txn", samples, iterations);
}

static void blob(int iterations, const char *dir) {
    /* 100 rows of 10 KiB: they fit in SQLite's page cache, as the hit benchmark's 100 entries do. */
    enum { rows = 100, size = 10 * 1024 };
    sqlite3 *db = open_in(dir, "floor-blob.sqlite");
    exec(db, "DROP TABLE IF EXISTS bodies");
    exec(db, "CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    unsigned char *payload = new_payload(size);
    sqlite3_stmt *insert;
    exec(db, "BEGIN");
    insert = prepare(db, "INSERT INTO bodies (id, body) VALUES (?, ?)");
    for (int i = 1; i <= rows; i++) {
        sqlite3_bind_int(insert, 1, i);
        sqlite3_bind_blob(insert, 2, payload, size, SQLITE_STATIC);
        check(sqlite3_step(insert), db, "INSERT");
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    exec(db, "COMMIT");

    sqlite3_stmt *select;
    select = prepare(db, "SELECT body FROM bodies WHERE id = ?");
    unsigned char *copy = malloc(size);
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    unsigned long long checksum = 0;
    for (int i = -iterations / 10; i < iterations; i++) {
        long long start = now_ns();
        sqlite3_bind_int(select, 1, (i < 0 ? -i : i) % rows + 1);
        check(sqlite3_step(select), db, "SELECT");
        int length = sqlite3_column_bytes(select, 0);
        memcpy(copy, sqlite3_column_blob(select, 0), (size_t)length); /* the caller gets its own copy */
        sqlite3_reset(select);
        if (i >= 0) samples[i] = now_ns() - start;
        checksum += copy[i & (size - 1)];
    }
    sqlite3_finalize(select);
    sqlite3_close(db);
    report("floor.blob", samples, iterations);
    fprintf(stderr, "checksum %llu\n", checksum);
    free(copy);
    free(payload);
}

static void upsert(int iterations, const char *dir) {
    enum { rows = 1000, size = 10 * 1024 };
    sqlite3 *db = open_in(dir, "floor-upsert.sqlite");
    exec(db, "DROP TABLE IF EXISTS entries");
    exec(db, "CREATE TABLE entries (id INTEGER PRIMARY KEY, key TEXT NOT NULL, body BLOB NOT NULL)");
    exec(db, "CREATE UNIQUE INDEX entries_by_key ON entries (key)");
    unsigned char *payload = new_payload(size);
    sqlite3_stmt *begin, *write, *commit;
    begin = prepare(db, "BEGIN IMMEDIATE");
    write = prepare(db, "INSERT INTO entries (key, body) VALUES (?, ?) "
                        "ON CONFLICT (key) DO UPDATE SET body = excluded.body");
    commit = prepare(db, "COMMIT");
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    char key[80];
    /* The first `rows` upserts fill the table; the warm-up and the timed ones replace. */
    for (int i = -rows - iterations / 10; i < iterations; i++) {
        /* Keys spread like digests, so the index is written at random places, as a cache's is. */
        snprintf(key, sizeof key, "%016llx", (unsigned long long)(((i + rows) % rows) * 0x9E3779B97F4A7C15ULL));
        payload[0] = (unsigned char)i;
        long long start = now_ns();
        check(sqlite3_step(begin), db, "BEGIN IMMEDIATE");
        sqlite3_reset(begin);
        sqlite3_bind_text(write, 1, key, -1, SQLITE_TRANSIENT);
        sqlite3_bind_blob(write, 2, payload, size, SQLITE_STATIC);
        check(sqlite3_step(write), db, "UPSERT");
        sqlite3_reset(write);
        check(sqlite3_step(commit), db, "COMMIT");
        sqlite3_reset(commit);
        if (i >= 0) samples[i] = now_ns() - start;
    }
    sqlite3_finalize(begin);
    sqlite3_finalize(write);
    sqlite3_finalize(commit);
    sqlite3_close(db);
    report("floor.upsert", samples, iterations);
    free(payload);
}

static void contention(int processes, int iterations, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/floor-contention.sqlite", dir);
    prepare_counter(path);
    run_transactions(path, iterations / 10 + 1, NULL);

    long long start = now_ns();
    run_transactions(path, iterations, NULL);
    double single = (double)iterations / ((double)(now_ns() - start) / 1e9);

    int pipes[64][2];
    start = now_ns();
    for (int p = 0; p < processes; p++) {
        if (pipe(pipes[p]) != 0) { perror("pipe"); exit(1); }
        pid_t pid = fork();
        if (pid == 0) {
            int busy = run_transactions(path, iterations, NULL);
            if (write(pipes[p][1], &busy, sizeof busy) != sizeof busy) _exit(2);
            _exit(0);
        }
        close(pipes[p][1]);
    }
    int busy = 0;
    for (int p = 0; p < processes; p++) {
        int child = 0;
        if (read(pipes[p][0], &child, sizeof child) == sizeof child) busy += child;
        close(pipes[p][0]);
    }
    while (wait(NULL) > 0) {}
    double aggregate = (double)processes * iterations / ((double)(now_ns() - start) / 1e9);
    printf("RESULT floor.contention.single_ops_per_s %.0f\n", single);
    printf("RESULT floor.contention.aggregate_ops_per_s %.0f\n", aggregate);
    printf("RESULT floor.contention.busy %d\n", busy);
}

/* The admission's SQL, in the order AdmissionTable.admit runs it for an admitted request on a
 * closed circuit, back to back as the harness's admissions come: the charge event, the usage total,
 * the window written back (both rows exist then, so both are UPDATEs, as QuotaTable.charge and
 * ThrottleTable.save issue them). The circuit's, the window's and the bucket's rows are not read: the
 * writer connection remembers them between its own transactions (RememberedRows). Keep in step
 * with ThrottleTable and QuotaTable. */
static const char *const admission_sql[] = {
    "INSERT INTO quota_events (at_ms, pacific_date, bucket, endpoint, kind, units, reservation_id, detail) "
    "VALUES (?5, ?3, ?4, ?1, 'charge', 1, NULL, NULL)",
    "UPDATE quota_usage SET units = units + 1, calls = calls + 1 "
    "WHERE pacific_date = ?3 AND bucket = ?4 AND endpoint = ?1 AND units BETWEEN 0 AND ?2 - 1",
    "UPDATE throttle_limits SET admitted_at_ms = ?6 WHERE endpoint = ?1",
};

/* Milliseconds of the wall clock, as Tollgate stamps its rows. Whole seconds would not do: an
 * unchanged value is not written again (SQLite compares an overwritten row with what it holds), and
 * least-recently-used order among rows stamped with one second is another order than Tollgate's. */
static long long wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void statements(int iterations, const char *path) {
    enum { count = sizeof admission_sql / sizeof admission_sql[0] };
    sqlite3 *db = open_file(path);
    sqlite3_stmt *begin, *commit, *steps[count];
    begin = prepare(db, "BEGIN IMMEDIATE");
    commit = prepare(db, "COMMIT");
    for (int i = 0; i < count; i++) steps[i] = prepare(db, admission_sql[i]);
    /* The day of the file's usage row, so the charge adds to it as the harness's did. */
    sqlite3_stmt *day;
    check(sqlite3_prepare_v2(db, "SELECT pacific_date FROM quota_usage ORDER BY pacific_date DESC LIMIT 1", -1, &day, NULL),
          db, "no quota_usage: run the harness's admission on this file first");
    char date[16] = "2026-01-01";
    if (sqlite3_step(day) == SQLITE_ROW) snprintf(date, sizeof date, "%s", (const char *)sqlite3_column_text(day, 0));
    sqlite3_finalize(day);
    /* The window as ThrottleTable keeps it for the harness's limit (2 ms): the admitted times
     * still in it, ascending, and this admission's appended, so its text changes each time. */
    enum { most = 512 };
    long long admitted[most];
    int times = 0;
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    char window[most * 21 + 3];
    for (int i = -iterations / 10; i < iterations; i++) {
        /* Made before the clock starts: encoding the window is Tollgate's own work, not the SQL's. */
        long long now_ms = wall_ms();
        int kept = 0;
        for (int k = 0; k < times; k++) if (admitted[k] > now_ms - 2) admitted[kept++] = admitted[k];
        times = kept < most ? kept : most - 1;
        admitted[times++] = now_ms;
        int length = snprintf(window, sizeof window, "[");
        for (int k = 0; k < times; k++) length += snprintf(window + length, sizeof window - (size_t)length, "%s%lld", k ? "," : "", admitted[k]);
        snprintf(window + length, sizeof window - (size_t)length, "]");
        long long start = now_ns();
        check(sqlite3_step(begin), db, "BEGIN IMMEDIATE");
        sqlite3_reset(begin);
        for (int s = 0; s < count; s++) {
            sqlite3_stmt *step = steps[s];
            for (int parameter = 1; parameter <= sqlite3_bind_parameter_count(step); parameter++) {
                const char *name = sqlite3_bind_parameter_name(step, parameter);
                switch (name ? atoi(name + 1) : 0) {
                case 1: sqlite3_bind_text(step, parameter, "videos.list", -1, SQLITE_STATIC); break;
                case 2: sqlite3_bind_int64(step, parameter, 1000000000000LL); break;
                case 3: sqlite3_bind_text(step, parameter, date, -1, SQLITE_STATIC); break;
                case 4: sqlite3_bind_text(step, parameter, "youtube", -1, SQLITE_STATIC); break;
                case 5: sqlite3_bind_int64(step, parameter, now_ms); break;
                case 6: sqlite3_bind_text(step, parameter, window, -1, SQLITE_STATIC); break;
                default: break;
                }
            }
            int rc;
            while ((rc = sqlite3_step(step)) == SQLITE_ROW) {}
            check(rc, db, admission_sql[s]);
            sqlite3_reset(step);
        }
        check(sqlite3_step(commit), db, "COMMIT");
        sqlite3_reset(commit);
        if (i >= 0) samples[i] = now_ns() - start;
    }
    finish(db, begin, commit, steps, count);
    report("floor.admission_statements", samples, iterations);
}

/* A cache store at capacity, in the order SQLiteStore.storeCacheEntry runs it (the buffered miss
 * counts, which a run of stores carries once per activityFlushThreshold (64) stores; the resource's
 * rows, the totals, the LRU victim taken over in place with its body, expiry, the totals again).
 * Keep in step with CacheTable and ETagCache.storeResponse. */
static const char *const store_sql[] = {
    "INSERT INTO cache_stats_daily (pacific_date, endpoint, hits, revalidations, misses, stale, bytes_saved, coalesced) "
    "VALUES (?1, ?2, 0, 0, 1, 0, 0, 0) ON CONFLICT (pacific_date, endpoint) DO UPDATE SET "
    "hits = hits + excluded.hits, revalidations = revalidations + excluded.revalidations, "
    "misses = misses + excluded.misses, stale = stale + excluded.stale, "
    "bytes_saved = bytes_saved + excluded.bytes_saved, coalesced = coalesced + excluded.coalesced",
    "SELECT id, variant_key, vary, hit_count FROM cache_entries WHERE resource_key = ?1",
    "SELECT entries, body_bytes FROM cache_totals WHERE id = 1",
    "SELECT id, body_size FROM cache_entries ORDER BY last_access_ms, id LIMIT 1",
    "UPDATE cache_entries SET resource_key = ?1, variant_key = '', endpoint = ?2, method = 'GET', url = ?3, vary = NULL, "
    "status = 200, headers = ?4, etag = '\"v1-etag\"', last_modified = NULL, body_size = 10240, stored_at_ms = ?5, "
    "validated_at_ms = ?5, fresh_until_ms = ?5 + 3600000, last_access_ms = ?5, hit_count = 0, initial_age_ms = 0 "
    "WHERE id = ?6",
    "UPDATE cache_bodies SET body = ?1 WHERE entry_id = ?2",
    "DELETE FROM cache_entries WHERE last_access_ms < ?1 AND validated_at_ms < ?1",
    "SELECT entries, body_bytes FROM cache_totals WHERE id = 1",
};

static void store_statements(int iterations, const char *path) {
    enum { count = sizeof store_sql / sizeof store_sql[0], size = 10 * 1024 };
    sqlite3 *db = open_file(path);
    sqlite3_stmt *begin, *commit, *steps[count];
    begin = prepare(db, "BEGIN IMMEDIATE");
    commit = prepare(db, "COMMIT");
    for (int i = 0; i < count; i++) steps[i] = prepare(db, store_sql[i]);
    unsigned char *payload = new_payload(size);
    static const char headers[] = "Content-Type: application/json; charset=UTF-8\nETag: \"v1-etag\"\n"
                                  "Cache-Control: private, max-age=3600";
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    char key[256], url[160];
    for (int i = -iterations / 10; i < iterations; i++) {
        /* A new resource each time, keyed as the harness's stores are (schema version 8): the URL, a
         * line feed and a digest. */
        snprintf(url, sizeof url, "https://www.googleapis.com/youtube/v3/videos?id=floor%d&key=REDACTED&part=snippet", i);
        snprintf(key, sizeof key, "%s\n%016llx%016llx%016llx%016llx", url,
                 (unsigned long long)(i + 7) * 0x9E3779B97F4A7C15ULL,
                 (unsigned long long)(now_ns() + getpid()) * 0xC2B2AE3D27D4EB4FULL,
                 (unsigned long long)(i + 11) * 0xC2B2AE3D27D4EB4FULL,
                 (unsigned long long)(i + 13) * 0x9E3779B97F4A7C15ULL);
        payload[0] = (unsigned char)i;
        long long now_ms = wall_ms();
        long long start = now_ns();
        long long victim = 0;
        check(sqlite3_step(begin), db, "BEGIN IMMEDIATE");
        sqlite3_reset(begin);
        for (int s = 0; s < count; s++) {
            sqlite3_stmt *step = steps[s];
            if (s == 0 && i % 64 != 0) continue; /* the statistics: once per flush threshold */
            switch (s) {
            case 0: sqlite3_bind_text(step, 1, "2026-11-25", -1, SQLITE_STATIC);
                    sqlite3_bind_text(step, 2, "videos.list", -1, SQLITE_STATIC); break;
            case 1: sqlite3_bind_text(step, 1, key, -1, SQLITE_STATIC); break;
            case 4: sqlite3_bind_text(step, 1, key, -1, SQLITE_STATIC);
                    sqlite3_bind_text(step, 2, "videos.list", -1, SQLITE_STATIC);
                    sqlite3_bind_text(step, 3, url, -1, SQLITE_STATIC);
                    sqlite3_bind_text(step, 4, headers, -1, SQLITE_STATIC);
                    sqlite3_bind_int64(step, 5, now_ms);
                    sqlite3_bind_int64(step, 6, victim); break;
            case 5: sqlite3_bind_blob(step, 1, payload, size, SQLITE_STATIC);
                    sqlite3_bind_int64(step, 2, victim); break;
            case 6: sqlite3_bind_int64(step, 1, now_ms - 7LL * 86400000); break;
            default: break;
            }
            int rc;
            while ((rc = sqlite3_step(step)) == SQLITE_ROW) {
                if (s == 3) victim = sqlite3_column_int64(step, 0);
            }
            check(rc, db, store_sql[s]);
            sqlite3_reset(step);
        }
        check(sqlite3_step(commit), db, "COMMIT");
        sqlite3_reset(commit);
        if (i >= 0) samples[i] = now_ns() - start;
        if (victim == 0) { fprintf(stderr, "floor store-statements: no entry to take over: run the harness's store on this file first\n"); exit(1); }
    }
    finish(db, begin, commit, steps, count);
    report("floor.store_statements", samples, iterations);
    free(payload);
}

/* DESIGN.md: "Reservation is one BEGIN IMMEDIATE transaction: check, charge, append an event ...
 * the totals always equal the sum of the events", and the throttle's window is persisted and
 * shared. So an admission writes at least an event, a day's total and the endpoint's window: three
 * B-trees, three pages. Here each is the cheapest statement that writes it (the window as one
 * integer), with none of the reads that decide the admission. */
static void design_admission(int iterations, const char *dir) {
    sqlite3 *db = open_in(dir, "floor-design-admission.sqlite");
    exec(db, "DROP TABLE IF EXISTS events; DROP TABLE IF EXISTS totals; DROP TABLE IF EXISTS windows");
    exec(db, "CREATE TABLE events (id INTEGER PRIMARY KEY, at_ms INTEGER NOT NULL, units INTEGER NOT NULL)");
    exec(db, "CREATE TABLE totals (day TEXT NOT NULL, bucket TEXT NOT NULL, endpoint TEXT NOT NULL, "
             "units INTEGER NOT NULL, calls INTEGER NOT NULL, PRIMARY KEY (day, bucket, endpoint)) WITHOUT ROWID");
    exec(db, "CREATE TABLE windows (endpoint TEXT PRIMARY KEY NOT NULL, admitted INTEGER NOT NULL)");
    exec(db, "INSERT INTO totals VALUES ('2026-11-25', 'youtube', 'videos.list', 0, 0)");
    exec(db, "INSERT INTO windows VALUES ('videos.list', 0)");
    static const char *const sql[] = {
        "INSERT INTO events (at_ms, units) VALUES (?1, 1)",
        "UPDATE totals SET units = units + 1, calls = calls + 1 "
        "WHERE day = '2026-11-25' AND bucket = 'youtube' AND endpoint = 'videos.list'",
        "UPDATE windows SET admitted = admitted + 1 WHERE endpoint = 'videos.list'",
    };
    enum { count = sizeof sql / sizeof sql[0] };
    sqlite3_stmt *begin, *commit, *writes[count];
    begin = prepare(db, "BEGIN IMMEDIATE");
    commit = prepare(db, "COMMIT");
    for (int s = 0; s < count; s++) writes[s] = prepare(db, sql[s]);
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    for (int i = -iterations / 10; i < iterations; i++) {
        long long start = now_ns();
        check(sqlite3_step(begin), db, "BEGIN IMMEDIATE");
        sqlite3_reset(begin);
        sqlite3_bind_int64(writes[0], 1, (long long)i);
        step_each(db, writes, 0, count);
        check(sqlite3_step(commit), db, "COMMIT");
        sqlite3_reset(commit);
        if (i >= 0) samples[i] = now_ns() - start;
    }
    finish(db, begin, commit, writes, count);
    report("floor.design_admission", samples, iterations);
}

/* DESIGN.md: "Metadata and body live in separate tables so a 304 or an LRU touch does not rewrite
 * the body", eviction by LRU at 1000 entries, a key to look entries up by. So a store at capacity
 * finds the least recently used entry by an index on its last use, gives it a new key (its unique
 * index), a new last use (the LRU index) and a new body row. Nothing else: no URL index, no
 * statistics, no totals, headers of 100 bytes. */
static void design_store(int iterations, const char *dir) {
    enum { rows = 1000, size = 10 * 1024 };
    sqlite3 *db = open_in(dir, "floor-design-store.sqlite");
    exec(db, "DROP TABLE IF EXISTS bodies; DROP TABLE IF EXISTS entries");
    exec(db, "CREATE TABLE entries (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, "
             "last_access INTEGER NOT NULL, headers TEXT NOT NULL)");
    exec(db, "CREATE INDEX entries_lru ON entries (last_access)");
    exec(db, "CREATE TABLE bodies (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
    unsigned char *payload = new_payload(size);
    sqlite3_stmt *fill;
    exec(db, "BEGIN");
    fill = prepare(db, "INSERT INTO entries (id, key, last_access, headers) VALUES (?1, printf('%016x', ?1 * 40503), "
                       "?1 - 2000000, printf('%100s', 'h'))");
    for (int i = 1; i <= rows; i++) {
        sqlite3_bind_int(fill, 1, i);
        check(sqlite3_step(fill), db, "INSERT");
        sqlite3_reset(fill);
    }
    sqlite3_finalize(fill);
    fill = prepare(db, "INSERT INTO bodies (id, body) SELECT id, ?1 FROM entries");
    sqlite3_bind_blob(fill, 1, payload, size, SQLITE_STATIC);
    check(sqlite3_step(fill), db, "INSERT");
    sqlite3_finalize(fill);
    exec(db, "COMMIT");

    static const char *const sql[] = {
        "SELECT id FROM entries ORDER BY last_access LIMIT 1",
        "UPDATE entries SET key = ?1, last_access = ?2 WHERE id = ?3",
        "UPDATE bodies SET body = ?1 WHERE id = ?2",
    };
    enum { count = sizeof sql / sizeof sql[0] };
    sqlite3_stmt *begin, *commit, *writes[count];
    begin = prepare(db, "BEGIN IMMEDIATE");
    commit = prepare(db, "COMMIT");
    for (int s = 0; s < count; s++) writes[s] = prepare(db, sql[s]);
    char key[40];
    long long *samples = malloc(sizeof(long long) * (size_t)iterations);
    for (int i = -iterations / 10; i < iterations; i++) {
        /* A new key each time, spread like a digest, so its index entry lands at a random place. */
        snprintf(key, sizeof key, "%016llx", (unsigned long long)(i + rows + 1) * 0x9E3779B97F4A7C15ULL);
        payload[0] = (unsigned char)i;
        long long start = now_ns();
        check(sqlite3_step(begin), db, "BEGIN IMMEDIATE");
        sqlite3_reset(begin);
        check(sqlite3_step(writes[0]), db, sql[0]);
        long long victim = sqlite3_column_int64(writes[0], 0);
        sqlite3_reset(writes[0]);
        sqlite3_bind_text(writes[1], 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(writes[1], 2, (long long)(i + rows));
        sqlite3_bind_int64(writes[1], 3, victim);
        sqlite3_bind_blob(writes[2], 1, payload, size, SQLITE_STATIC);
        sqlite3_bind_int64(writes[2], 2, victim);
        step_each(db, writes, 1, count);
        check(sqlite3_step(commit), db, "COMMIT");
        sqlite3_reset(commit);
        if (i >= 0) samples[i] = now_ns() - start;
    }
    finish(db, begin, commit, writes, count);
    report("floor.design_store", samples, iterations);
    free(payload);
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "txn") == 0) {
        txn(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "blob") == 0) {
        blob(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "upsert") == 0) {
        upsert(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "statements") == 0) {
        statements(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "store-statements") == 0) {
        store_statements(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "design-admission") == 0) {
        design_admission(atoi(argv[2]), argv[3]);
    } else if (argc == 4 && strcmp(argv[1], "design-store") == 0) {
        design_store(atoi(argv[2]), argv[3]);
    } else if (argc == 5 && strcmp(argv[1], "contention") == 0 && atoi(argv[2]) <= 64) {
        contention(atoi(argv[2]), atoi(argv[3]), argv[4]);
    } else {
        fprintf(stderr, "usage: floor txn N DIR | floor blob N DIR | floor upsert N DIR | floor statements N FILE | floor store-statements N FILE | "
                        "floor design-admission N DIR | floor design-store N DIR | floor contention PROCS N DIR\n");
        return 64;
    }
    return 0;
}
