/*
 * swaplab's QEMU TCG plugin: records the 4 KiB virtual page of every load, store and
 * instruction fetch of a program run under QEMU user mode (`qemu-x86_64 -plugin ...`), and the
 * mmap/munmap/brk/mremap/madvise and regular-file read/write syscalls, in the raw format that
 * crates/trace/src/capture.rs reads (documented there and in docs/trace-format.md).
 *
 * Filter (per thread): a touch of one of the thread's last K distinct data pages (KX for code
 * pages) is not recorded; the filter is emptied every EPOCH instructions so that a page kept
 * hot in the filter still shows up once per epoch. Arguments: out=PATH, k=K, kx=KX,
 * epoch=EPOCH (k=0 records every access).
 *
 * The plugin API is declared here, not included: Debian's qemu-user ships the plugin-enabled
 * binary but not <qemu-plugin.h>. The declarations follow QEMU's documented plugin ABI
 * (version 1, as in QEMU 7.2) for the functions this file uses.
 */
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/stat.h>

/* ---- plugin ABI (declarations of the documented interface) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*tb_trans_cb)(qemu_plugin_id_t, struct qemu_plugin_tb *);
typedef void (*udata_cb)(unsigned int vcpu, void *userdata);
typedef void (*mem_cb)(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *userdata);
typedef void (*syscall_cb)(qemu_plugin_id_t, unsigned int vcpu, int64_t num, uint64_t a1, uint64_t a2,
                           uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8);
typedef void (*syscall_ret_cb)(qemu_plugin_id_t, unsigned int vcpu, int64_t num, int64_t ret);
typedef void (*atexit_cb)(qemu_plugin_id_t, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t, tb_trans_cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *, size_t);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *, udata_cb, enum qemu_plugin_cb_flags, void *);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *, mem_cb, enum qemu_plugin_cb_flags,
                                      enum qemu_plugin_mem_rw, void *);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t, syscall_cb);
void qemu_plugin_register_vcpu_syscall_ret_cb(qemu_plugin_id_t, syscall_ret_cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t, atexit_cb, void *);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ---- state ---- */
#define MAX_THREADS 1024
#define MAX_K 256
struct thread {
    uint64_t icount, epoch_end;
    uint64_t data[MAX_K], code[MAX_K]; /* recent distinct pages, most recent first */
    int nd, nc;
    uint64_t sc_args[6]; int64_t sc_num; /* syscall in flight */
    uint64_t sc_aux;                       /* file offset before a read/write */
};
static struct thread *threads[MAX_THREADS];
static FILE *out;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int k_data = 16, k_code = 64;
static uint64_t epoch = 1000000;

static struct thread *me(unsigned vcpu) {
    if (vcpu >= MAX_THREADS) vcpu = MAX_THREADS - 1;
    if (!threads[vcpu]) {
        pthread_mutex_lock(&lock);
        if (!threads[vcpu]) threads[vcpu] = calloc(1, sizeof(struct thread));
        pthread_mutex_unlock(&lock);
    }
    return threads[vcpu];
}

/* Raw record head: u8 tag, u32 thread, u64 icount (little-endian hosts only: x86-64). */
static void head(uint8_t tag, unsigned vcpu, uint64_t icount) {
    fwrite(&tag, 1, 1, out);
    uint32_t t = vcpu;
    fwrite(&t, 4, 1, out);
    fwrite(&icount, 8, 1, out);
}

static void u64s(const uint64_t *v, int n) { fwrite(v, 8, n, out); }

static void name(const char *s) {
    uint16_t n = (uint16_t)strlen(s);
    fwrite(&n, 2, 1, out);
    fwrite(s, 1, n, out);
}

/* Is `page` among the last k distinct pages? Move it to the front either way. */
static bool recent(uint64_t *list, int *n, int k, uint64_t page) {
    if (k == 0) return false;
    for (int i = 0; i < *n; i++) {
        if (list[i] == page) {
            memmove(list + 1, list, i * sizeof *list);
            list[0] = page;
            return true;
        }
    }
    int m = *n < k ? *n : k - 1;
    memmove(list + 1, list, m * sizeof *list);
    list[0] = page;
    if (*n < k) (*n)++;
    return false;
}

static void access_page(unsigned vcpu, uint8_t kind, uint64_t page) {
    struct thread *t = me(vcpu);
    if (t->icount >= t->epoch_end) {
        t->nd = t->nc = 0;
        t->epoch_end = t->icount + epoch;
    }
    bool hit = kind == 2 ? recent(t->code, &t->nc, k_code, page) : recent(t->data, &t->nd, k_data, page);
    if (hit) return;
    pthread_mutex_lock(&lock);
    head(kind, vcpu, t->icount);
    fwrite(&page, 8, 1, out);
    pthread_mutex_unlock(&lock);
}

/* A translation block starts: record its code page and count its instructions (a second
 * callback, with a count of 0, records the page a block crosses into). */
static void tb_exec(unsigned vcpu, void *udata) {
    uint64_t packed = (uint64_t)(uintptr_t)udata; /* page << 8 | instructions (<= 255) */
    struct thread *t = me(vcpu);
    access_page(vcpu, 2, packed >> 8);
    t->icount += packed & 0xff;
}

static void mem_access(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
    (void)udata;
    access_page(vcpu, qemu_plugin_mem_is_store(info) ? 1 : 0, vaddr >> 12);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (n == 0) return;
    uint64_t page = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0)) >> 12;
    uint64_t last = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, n - 1)) >> 12;
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)((page << 8) | (n > 255 ? 255 : n)));
    if (last != page) /* a block that crosses into the next page fetches from it too */
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)(last << 8));
    for (size_t i = 0; i < n; i++)
        qemu_plugin_register_vcpu_mem_cb(qemu_plugin_tb_get_insn(tb, i), mem_access, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, NULL);
}

/* x86-64 syscall numbers */
enum { SYS_read = 0, SYS_write = 1, SYS_mmap = 9, SYS_munmap = 11, SYS_brk = 12, SYS_pread64 = 17,
       SYS_pwrite64 = 18, SYS_mremap = 25, SYS_madvise = 28 };

static bool fd_file(int64_t fd, char *buf, size_t len) {
    char link[64];
    struct stat st;
    if (fd < 0 || fstat((int)fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    snprintf(link, sizeof link, "/proc/self/fd/%d", (int)fd);
    ssize_t n = readlink(link, buf, len - 1);
    if (n < 0) return false;
    buf[n] = 0;
    return true;
}

static void on_syscall(qemu_plugin_id_t id, unsigned vcpu, int64_t num, uint64_t a1, uint64_t a2,
                       uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7, uint64_t a8) {
    (void)id; (void)a7; (void)a8;
    struct thread *t = me(vcpu);
    uint64_t a[6] = {a1, a2, a3, a4, a5, a6};
    memcpy(t->sc_args, a, sizeof a);
    t->sc_num = num;
    if (num == SYS_read || num == SYS_write) t->sc_aux = (uint64_t)lseek((int)a1, 0, SEEK_CUR);
    if (num == SYS_brk) t->sc_aux = 0;
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned vcpu, int64_t num, int64_t ret) {
    (void)id;
    struct thread *t = me(vcpu);
    uint64_t *a = t->sc_args;
    char file[4096] = "";
    if (num != t->sc_num || ret < 0) return;
    pthread_mutex_lock(&lock);
    switch (num) {
    case SYS_mmap: {
        uint64_t v[5] = {(uint64_t)ret, a[1], a[2], a[3], a[5]};
        if (!(a[3] & 0x20)) fd_file((int64_t)a[4], file, sizeof file);
        head(16, vcpu, t->icount); u64s(v, 5); name(file);
        break;
    }
    case SYS_munmap: head(17, vcpu, t->icount); u64s(a, 2); break;
    case SYS_brk: { uint64_t v[2] = {a[0], (uint64_t)ret}; head(18, vcpu, t->icount); u64s(v, 2); break; }
    case SYS_mremap: { uint64_t v[4] = {a[0], a[1], (uint64_t)ret, a[2]}; head(19, vcpu, t->icount); u64s(v, 4); break; }
    case SYS_madvise: head(20, vcpu, t->icount); u64s(a, 3); break;
    case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: {
        if (ret == 0 || !fd_file((int64_t)a[0], file, sizeof file)) break;
        bool positional = num == SYS_pread64 || num == SYS_pwrite64;
        uint64_t v[2] = {positional ? a[3] : t->sc_aux, (uint64_t)ret};
        head((num == SYS_write || num == SYS_pwrite64) ? 22 : 21, vcpu, t->icount); u64s(v, 2); name(file);
        break;
    }
    }
    pthread_mutex_unlock(&lock);
}

static void at_exit(qemu_plugin_id_t id, void *udata) {
    (void)id; (void)udata;
    pthread_mutex_lock(&lock);
    fflush(out);
    pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv) {
    (void)info;
    const char *path = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "out=", 4)) path = argv[i] + 4;
        else if (!strncmp(argv[i], "k=", 2)) k_data = atoi(argv[i] + 2);
        else if (!strncmp(argv[i], "kx=", 3)) k_code = atoi(argv[i] + 3);
        else if (!strncmp(argv[i], "epoch=", 6)) epoch = strtoull(argv[i] + 6, NULL, 10);
        else { fprintf(stderr, "pagetrace: unknown argument %s\n", argv[i]); return -1; }
    }
    if (k_data < 0 || k_data > MAX_K || k_code < 0 || k_code > MAX_K || !path || epoch == 0) {
        fprintf(stderr, "pagetrace: need out=PATH, 0 <= k, kx <= %d, epoch > 0\n", MAX_K);
        return -1;
    }
    out = fopen(path, "wb");
    if (!out) { perror(path); return -1; }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    fwrite("SWPRAW01", 1, 8, out);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
