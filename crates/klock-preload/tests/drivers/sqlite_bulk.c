/* Threaded SQLite bulk insert, built by tests/programs.rs against the
 * system libsqlite3 (Debian: libsqlite3-dev) and run plain and under the
 * preload.
 *
 * usage: sqlite_bulk DB_PATH
 *
 * Four writer threads each insert ROWS_OWN rows through their own
 * connection in BEGIN IMMEDIATE batches; two more threads insert ROWS_SHARED
 * rows each through ONE shared connection (serialized mode: SQLite's
 * per-connection recursive mutex is then really contended); a reader thread
 * polls count/sum through a fifth connection the whole time.  All on one
 * WAL database file with busy_timeout.  Afterwards the row count, per-thread
 * counts, a checksum and every payload are verified.  Exit 0 and a PASS line
 * on success. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OWN_THREADS 4
#define SHARED_THREADS 2
#define ROWS_OWN 12000
#define ROWS_SHARED 1000
#define BATCH 250
#define TOTAL_ROWS (OWN_THREADS * ROWS_OWN + SHARED_THREADS * ROWS_SHARED)

static const char *db_path;
static sqlite3 *shared_db;
static atomic_int writers_left = OWN_THREADS + SHARED_THREADS;

#define DIE(...)                                                              \
    do {                                                                      \
        fprintf(stderr, "FAIL sqlite_bulk: " __VA_ARGS__);                    \
        fputc('\n', stderr);                                                  \
        _exit(1);                                                             \
    } while (0)

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int64_t row_hash(int th, int seq) {
    return (int64_t)(mix(((uint64_t)th << 32) | (uint32_t)seq) & 0x7fffffff);
}

/* Deterministic payload of 8..199 characters. */
static void row_payload(int th, int seq, char *buf, size_t cap) {
    uint64_t h = mix((uint64_t)th * 1000003u + (uint64_t)seq + 17);
    size_t len = 8 + (size_t)(h % 192);
    if (len >= cap)
        len = cap - 1;
    for (size_t i = 0; i < len; i++) {
        h = mix(h + i);
        buf[i] = (char)('a' + h % 26);
    }
    buf[len] = 0;
}

static sqlite3 *open_db(void) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(db_path, &db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_FULLMUTEX,
                             NULL);
    if (rc != SQLITE_OK)
        DIE("open %s: %s", db_path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_busy_timeout(db, 30000);
    return db;
}

/* Run a statement without results, retrying while the database is busy. */
static void exec_retry(sqlite3 *db, const char *sql) {
    for (int attempt = 0;; attempt++) {
        char *err = NULL;
        int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
        if (rc == SQLITE_OK)
            return;
        if ((rc == SQLITE_BUSY || rc == SQLITE_LOCKED) && attempt < 1000) {
            sqlite3_free(err);
            usleep(1000);
            continue;
        }
        DIE("%s: %s (rc %d)", sql, err ? err : "?", rc);
    }
}

static void insert_row(sqlite3 *db, sqlite3_stmt *st, int th, int seq) {
    char payload[256];
    row_payload(th, seq, payload, sizeof payload);
    sqlite3_bind_int(st, 1, th);
    sqlite3_bind_int(st, 2, seq);
    sqlite3_bind_text(st, 3, payload, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, row_hash(th, seq));
    int rc;
    for (int attempt = 0; (rc = sqlite3_step(st)) == SQLITE_BUSY && attempt < 1000;
         attempt++) {
        sqlite3_reset(st);
        usleep(1000);
    }
    if (rc != SQLITE_DONE)
        DIE("insert th %d seq %d: %s (rc %d)", th, seq, sqlite3_errmsg(db), rc);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

static const char *insert_sql =
    "INSERT INTO t(th, seq, payload, h) VALUES (?1, ?2, ?3, ?4)";

static void *own_writer(void *arg) {
    int th = (int)(intptr_t)arg;
    sqlite3 *db = open_db();
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, insert_sql, -1, &st, NULL) != SQLITE_OK)
        DIE("prepare: %s", sqlite3_errmsg(db));
    for (int seq = 0; seq < ROWS_OWN;) {
        exec_retry(db, "BEGIN IMMEDIATE");
        for (int k = 0; k < BATCH && seq < ROWS_OWN; k++, seq++)
            insert_row(db, st, th, seq);
        exec_retry(db, "COMMIT");
    }
    sqlite3_finalize(st);
    if (sqlite3_close(db) != SQLITE_OK)
        DIE("close: busy");
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void *shared_writer(void *arg) {
    int th = (int)(intptr_t)arg;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(shared_db, insert_sql, -1, &st, NULL) != SQLITE_OK)
        DIE("prepare (shared): %s", sqlite3_errmsg(shared_db));
    /* Autocommit: a transaction per row (transactions cannot be shared
     * between two threads on one connection). */
    for (int seq = 0; seq < ROWS_SHARED; seq++)
        insert_row(shared_db, st, th, seq);
    sqlite3_finalize(st);
    atomic_fetch_sub(&writers_left, 1);
    return NULL;
}

static void query2(sqlite3 *db, const char *sql, int64_t *a, int64_t *b) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        DIE("prepare %s: %s", sql, sqlite3_errmsg(db));
    int rc;
    for (int attempt = 0; (rc = sqlite3_step(st)) == SQLITE_BUSY && attempt < 1000;
         attempt++) {
        sqlite3_reset(st);
        usleep(1000);
    }
    if (rc != SQLITE_ROW)
        DIE("%s: %s (rc %d)", sql, sqlite3_errmsg(db), rc);
    *a = sqlite3_column_int64(st, 0);
    *b = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
}

static long reader_polls;

static void *reader(void *arg) {
    (void)arg;
    sqlite3 *db = open_db();
    int64_t last = 0;
    while (atomic_load(&writers_left) > 0) {
        int64_t n, sum;
        query2(db, "SELECT count(*), coalesce(sum(h), 0) FROM t", &n, &sum);
        if (n < last || n > TOTAL_ROWS)
            DIE("reader saw %lld rows after %lld", (long long)n, (long long)last);
        last = n;
        reader_polls++;
        usleep(2000);
    }
    sqlite3_close(db);
    return NULL;
}

/* No database, WAL or shared-memory file left from an earlier run. */
static void remove_db_files(void) {
    char side[4096];
    unlink(db_path);
    snprintf(side, sizeof side, "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db_path);
    unlink(side);
}

/* Creates the WAL database and its table; returns the main connection and
 * opens the one the shared writers use. */
static sqlite3 *create_db(void) {
    sqlite3 *db = open_db();
    exec_retry(db, "PRAGMA journal_mode=WAL");
    exec_retry(db, "PRAGMA synchronous=OFF");
    exec_retry(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, th INT NOT NULL, "
                   "seq INT NOT NULL, payload TEXT NOT NULL, h INT NOT NULL, "
                   "UNIQUE(th, seq))");
    shared_db = open_db();
    exec_retry(shared_db, "PRAGMA synchronous=OFF");
    return db;
}

/* The reader and every writer, run to completion; then the shared connection
 * is closed. */
static void run_threads(void) {
    pthread_t t[OWN_THREADS + SHARED_THREADS], r;
    if (pthread_create(&r, NULL, reader, NULL) != 0)
        DIE("pthread_create");
    for (int i = 0; i < OWN_THREADS; i++)
        if (pthread_create(&t[i], NULL, own_writer, (void *)(intptr_t)i) != 0)
            DIE("pthread_create");
    for (int i = 0; i < SHARED_THREADS; i++)
        if (pthread_create(&t[OWN_THREADS + i], NULL, shared_writer,
                           (void *)(intptr_t)(OWN_THREADS + i)) != 0)
            DIE("pthread_create");
    for (int i = 0; i < OWN_THREADS + SHARED_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_join(r, NULL);
    if (sqlite3_close(shared_db) != SQLITE_OK)
        DIE("close shared: busy");
}

/* The row count, the checksum of every row's hash, and that no (th, seq)
 * repeats; returns the checksum. */
static int64_t verify_totals(sqlite3 *db) {
    int64_t n, sum, expect_sum = 0;
    for (int th = 0; th < OWN_THREADS + SHARED_THREADS; th++) {
        int rows = th < OWN_THREADS ? ROWS_OWN : ROWS_SHARED;
        for (int seq = 0; seq < rows; seq++)
            expect_sum += row_hash(th, seq);
    }
    query2(db, "SELECT count(*), sum(h) FROM t", &n, &sum);
    if (n != TOTAL_ROWS)
        DIE("row count %lld, expected %d", (long long)n, TOTAL_ROWS);
    if (sum != expect_sum)
        DIE("checksum %lld, expected %lld", (long long)sum, (long long)expect_sum);
    int64_t distinct, maxseq;
    query2(db, "SELECT count(DISTINCT th * 1000000 + seq), max(seq) FROM t",
           &distinct, &maxseq);
    if (distinct != TOTAL_ROWS || maxseq != ROWS_OWN - 1)
        DIE("distinct %lld, max seq %lld", (long long)distinct, (long long)maxseq);
    return sum;
}

/* Every writer thread's row count. */
static void verify_per_thread(sqlite3 *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT th, count(*) FROM t GROUP BY th ORDER BY th",
                           -1, &st, NULL) != SQLITE_OK)
        DIE("prepare: %s", sqlite3_errmsg(db));
    int groups = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int th = sqlite3_column_int(st, 0);
        int cnt = sqlite3_column_int(st, 1);
        int want = th < OWN_THREADS ? ROWS_OWN : ROWS_SHARED;
        if (th != groups || cnt != want)
            DIE("thread %d has %d rows, expected %d", th, cnt, want);
        groups++;
    }
    sqlite3_finalize(st);
    if (groups != OWN_THREADS + SHARED_THREADS)
        DIE("%d writer groups", groups);
}

/* Every row's payload. */
static void verify_payloads(sqlite3 *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT th, seq, payload FROM t", -1, &st, NULL) !=
        SQLITE_OK)
        DIE("prepare: %s", sqlite3_errmsg(db));
    long checked = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        char want[256];
        int th = sqlite3_column_int(st, 0), seq = sqlite3_column_int(st, 1);
        row_payload(th, seq, want, sizeof want);
        const char *got = (const char *)sqlite3_column_text(st, 2);
        if (!got || strcmp(got, want) != 0)
            DIE("payload of (%d, %d) differs", th, seq);
        checked++;
    }
    sqlite3_finalize(st);
    if (checked != TOTAL_ROWS)
        DIE("checked %ld payloads", checked);
}

/* SQLite's own consistency check of the file. */
static void verify_integrity(sqlite3 *db) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) !=
        SQLITE_OK)
        DIE("prepare: %s", sqlite3_errmsg(db));
    if (sqlite3_step(st) != SQLITE_ROW)
        DIE("integrity_check: %s", sqlite3_errmsg(db));
    const char *ic = (const char *)sqlite3_column_text(st, 0);
    if (!ic || strcmp(ic, "ok") != 0)
        DIE("integrity_check: %s", ic ? ic : "(null)");
    sqlite3_finalize(st);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DB_PATH\n", argv[0]);
        return 2;
    }
    alarm(120); /* default action: the harness sees SIGALRM if this hangs */
    db_path = argv[1];
    if (!sqlite3_threadsafe())
        DIE("libsqlite3 was built without thread safety");
    remove_db_files();
    sqlite3 *db = create_db();
    run_threads();
    int64_t sum = verify_totals(db);
    verify_per_thread(db);
    verify_payloads(db);
    verify_integrity(db);
    if (sqlite3_close(db) != SQLITE_OK)
        DIE("close: busy");
    printf("PASS: sqlite_bulk rows=%d checksum=%lld reader_polls=%ld\n",
           TOTAL_ROWS, (long long)sum, reader_polls);
    return 0;
}
