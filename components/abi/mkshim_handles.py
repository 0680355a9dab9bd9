"""mkshim_handles.py: how a foreign-ABI shim represents the foreign handles (mkshim.py's
Gen mixes this class in): integer handles (MPICH: predefined ones through switches and a
perfect hash generated from the facts, the program's own objects through a table) and
object handles (Open MPI: pointers to predefined objects of the foreign sizes, reached
by copy relocations).  Methods use Gen's state (self.out, self.facts, self.nval, ...)."""

import sys

HANDLE_TYPES = ['MPI_Comm', 'MPI_Datatype', 'MPI_Group', 'MPI_Info', 'MPI_Errhandler', 'MPI_Op',
                'MPI_Request', 'MPI_Message', 'MPI_Win', 'MPI_File', 'MPI_Session']


class Handles:
    @staticmethod
    def perfect_hash(vals):
        """(bits, odd multiplier): (v * mul mod 2^32) >> (32 - bits) distinct for all vals"""
        import random
        rnd = random.Random(17)   # deterministic output
        for bits in range(max(1, (len(vals) - 1).bit_length()), 12):
            for _ in range(20000):
                mul = rnd.getrandbits(32) | 1
                if len({((v * mul) & 0xffffffff) >> (32 - bits) for v in vals}) == len(vals):
                    return bits, mul
        sys.exit('mkshim: no perfect hash for %d handles' % len(vals))

    def int_handles(self, w):
        """Foreign handles are ints.  Predefined ones map through switches generated from the
        facts (and a table native -> foreign); the program's own objects get handles of
        MPICH's shape (direct, the kind's bits, an index) from one table per handle type:
        two levels (chunks of 4096 entries published atomically, so lookups take no lock),
        entries released when the object is freed (the handle of an INOUT argument that
        Kumi replaced, e.g. by MPI_COMM_NULL or MPI_REQUEST_NULL); these kinds count
        references (MPI_Comm_group twice gives the same handle twice, each to be freed) and
        find a native object's handle through a hash.  Requests and messages, created and
        freed at a high rate, have a flat table of their own (fh_*): the handle's low bits
        index it directly and the entry holds the whole handle, so a lookup is one load and
        one compare (a handle freed and its slot reused fails it: bits 22-25 of the handle
        are the slot's generation); entries are taken and given back through per-thread
        free lists, without a lock."""
        natv = {}
        for n, c in self.nat.items():
            if c['type'] in HANDLE_TYPES:
                natv[n] = (c['type'], self.nval(n))
        fin = {t: {} for t in HANDLE_TYPES}    # type -> foreign value -> (name, native)
        hout = {}
        for n, (t, nv) in sorted(natv.items(), key=lambda x: (not x[0].endswith('_NULL'), x[0])):
            fv = self.fval(n)
            if fv is None or t == 'MPI_File':
                continue
            fv &= 0xffffffff
            if fv not in fin[t]:
                fin[t][fv] = (n, nv)
            hout.setdefault(nv, fv)
        kinds = {}
        for t in HANDLE_TYPES:
            if t == 'MPI_File':
                continue
            kinds[t] = (self.fval(t.upper() + '_NULL') >> 26) & 0xf
        # native predefined handles the foreign ABI lacks: a builtin handle of the kind, made up
        for n, (t, nv) in sorted(natv.items()):
            if t in kinds and nv not in hout:
                fv = (1 << 30) | (kinds[t] << 26) | 0x3f0000 | nv
                fin[t][fv] = (n, nv)
                hout[nv] = fv
        self.nobj = sum(len(v) for v in fin.values())
        top = max(v for _, v in natv.values()) + 1
        w('''/* ---- handles: MPICH's ints (MPI_File: a pointer) */
#include <pthread.h>
#define SHIM_BAD ((void *)0x%(bad)x)   /* a native predefined handle that is none: Kumi reports it invalid */
#define HT_CHUNK_BITS 12
#define HT_CHUNK (1 << HT_CHUNK_BITS)
#define HT_NCHUNKS (1 << (26 - HT_CHUNK_BITS))
#define HT_FIRST 64     /* indices below are MPICH's predefined direct handles (MPI_FLOAT_INT, ...) */
#define HT_BATCH 64     /* request entries moved at once between a thread's free list and the table's */
struct ht_ent { void *native; int refs; int next; };
struct ht_rev { void *native; int idx; struct ht_rev *next; };
struct ht {
    struct ht_ent *chunks[HT_NCHUNKS];   /* read with acquire loads, published with release stores */
    pthread_mutex_t lock;                /* for the rest */
    int used;                            /* entries handed out so far (bump allocation) */
    int free_head, nfree;                /* entries given back */
    unsigned base;                       /* (2 << 30) | kind << 26: a direct handle of the kind */
    int fast;                            /* requests, messages: per-thread free lists, no references */
    struct ht_rev *rev[1024];            /* native -> index (not fast) */
};
static inline struct ht_ent *ht_ent(struct ht *t, unsigned idx)
{
    struct ht_ent *c = __atomic_load_n(&t->chunks[idx >> HT_CHUNK_BITS], __ATOMIC_ACQUIRE);
    return c ? &c[idx & (HT_CHUNK - 1)] : NULL;
}
static inline void *ht_get(struct ht *t, int f)
{
    unsigned idx = (unsigned)f & 0x3ffffff;
    struct ht_ent *e = ht_ent(t, idx);
    void *n = e ? __atomic_load_n(&e->native, __ATOMIC_ACQUIRE) : NULL;
    return n ? n : SHIM_BAD;
}
/* under t->lock: a fresh or given-back entry's index, or -1 */
static int ht_take_locked(struct ht *t)
{
    if (t->free_head >= 0) {
        int i = t->free_head;
        t->free_head = ht_ent(t, (unsigned)i)->next;
        t->nfree--;
        return i;
    }
    if (t->used == 0) t->used = HT_FIRST;
    if (t->used >= (1 << 26)) return -1;
    unsigned i = (unsigned)t->used;
    if (!t->chunks[i >> HT_CHUNK_BITS]) {
        struct ht_ent *c = calloc(HT_CHUNK, sizeof *c);
        if (!c) return -1;
        __atomic_store_n(&t->chunks[i >> HT_CHUNK_BITS], c, __ATOMIC_RELEASE);
    }
    t->used++;
    return (int)i;
}
static unsigned ht_rev_hash(void *n) { uintptr_t v = (uintptr_t)n >> 4; return (unsigned)((v ^ (v >> 10) ^ (v >> 20)) & 1023); }
/* a handle for native object n (not fast): its existing one, or a new one; ref: count a reference */
static int ht_out(struct ht *t, void *n, int ref)
{
    pthread_mutex_lock(&t->lock);
    unsigned h = ht_rev_hash(n);
    struct ht_rev *r;
    for (r = t->rev[h]; r; r = r->next)
        if (r->native == n) break;
    int i;
    if (r) {
        i = r->idx;
        if (ref) ht_ent(t, (unsigned)i)->refs++;
    } else {
        i = ht_take_locked(t);
        r = i >= 0 ? malloc(sizeof *r) : NULL;
        if (!r) { pthread_mutex_unlock(&t->lock); return (int)(t->base | 0x3ffffff); }   /* out of handles: invalid */
        struct ht_ent *e = ht_ent(t, (unsigned)i);
        e->refs = 1;
        __atomic_store_n(&e->native, n, __ATOMIC_RELEASE);
        r->native = n; r->idx = i; r->next = t->rev[h]; t->rev[h] = r;
    }
    pthread_mutex_unlock(&t->lock);
    return (int)(t->base | (unsigned)i);
}
static void ht_release(struct ht *t, int f)
{
    unsigned i = (unsigned)f & 0x3ffffff;
    pthread_mutex_lock(&t->lock);
    struct ht_ent *e = ht_ent(t, i);
    if (e && e->native && --e->refs <= 0) {
        struct ht_rev **pp = &t->rev[ht_rev_hash(e->native)];
        while (*pp && (*pp)->native != e->native) pp = &(*pp)->next;
        if (*pp) { struct ht_rev *d = *pp; *pp = d->next; free(d); }
        __atomic_store_n(&e->native, NULL, __ATOMIC_RELEASE);
        e->next = t->free_head; t->free_head = (int)i; t->nfree++;
    }
    pthread_mutex_unlock(&t->lock);
}
/* requests and messages: a flat table each, reserved at start (MAP_NORESERVE: pages are used as
 * entries are), indexed by the handle's low bits; an entry in use holds its handle (kind bits,
 * storage 2 "direct", the slot's generation in bits fh.bits..25, the index), a free one the
 * same with bit 31 clear (never a valid handle).  A thread keeps up to 4 * HT_BATCH free
 * entries of each table; the table's own free list and bump pointer are under its lock. */
struct fh_ent { uint32_t f; int32_t next; void *native; };   /* next: the free list's link, or, in use, the request's mark (ht_greq_mark) */
struct fh {
    struct fh_ent *tab;
    uint32_t mask;                       /* (1 << bits) - 1 */
    uint32_t gen_one, gen_mask;          /* 1 << bits; the generation's bits */
    unsigned bits;
    unsigned base;                       /* (2 << 30) | kind << 26 */
    pthread_mutex_t lock;
    int used, free_head, nfree;
};
static struct fh fh_Request, fh_Message;
static __thread __attribute__((tls_model("initial-exec"))) struct { int head, n; } fh_tl[2] = { { -1, 0 }, { -1, 0 } };
static pthread_key_t ht_key;   /* a thread that ends gives its free entries back (ht_thread_end) */
/* the entry of handle f if f is one of the table's handles in use, else NULL */
static inline __attribute__((always_inline)) struct fh_ent *fh_ent(const struct fh *t, int f)
{
    struct fh_ent *e = &t->tab[(uint32_t)f & t->mask];
    return SHIM_LIKELY(__atomic_load_n(&e->f, __ATOMIC_ACQUIRE) == (uint32_t)f) ? e : NULL;
}
static __attribute__((noinline)) int fh_refill(struct fh *t, int slot)
{
    pthread_setspecific(ht_key, (void *)1);
    pthread_mutex_lock(&t->lock);
    for (int k = 0; k < HT_BATCH; k++) {
        int j;
        if (t->free_head >= 0) {
            j = t->free_head;
            t->free_head = t->tab[j].next;
            t->nfree--;
        } else {
            if (t->used < HT_FIRST) t->used = HT_FIRST;
            if ((uint32_t)t->used > t->mask) break;
            j = t->used++;
        }
        t->tab[j].next = fh_tl[slot].head;
        fh_tl[slot].head = j; fh_tl[slot].n++;
    }
    pthread_mutex_unlock(&t->lock);
    return fh_tl[slot].head;
}
static __attribute__((noinline)) void fh_spill(struct fh *t, int slot)
{
    pthread_mutex_lock(&t->lock);
    while (fh_tl[slot].n > 2 * HT_BATCH) {
        int j = fh_tl[slot].head;
        fh_tl[slot].head = t->tab[j].next; fh_tl[slot].n--;
        t->tab[j].next = t->free_head; t->free_head = j; t->nfree++;
    }
    pthread_mutex_unlock(&t->lock);
}
static inline __attribute__((always_inline)) int fh_new(struct fh *t, int slot, void *n)
{
    int i = fh_tl[slot].head;
    if (SHIM_UNLIKELY(i < 0) && (i = fh_refill(t, slot)) < 0) return (int)(t->base | 0x3ffffff);   /* out of handles: invalid */
    struct fh_ent *e = &t->tab[i];
    fh_tl[slot].head = e->next; fh_tl[slot].n--;
    uint32_t f = t->base | ((e->f + t->gen_one) & t->gen_mask) | (uint32_t)i;   /* the next generation */
    e->next = 0;
    e->native = n;
    __atomic_store_n(&e->f, f, __ATOMIC_RELEASE);
    return (int)f;
}
static inline __attribute__((always_inline)) void fh_release(struct fh *t, int slot, int f)
{
    struct fh_ent *e = fh_ent(t, f);
    if (!e) return;   /* predefined, or not (any more) in use */
    __atomic_store_n(&e->f, (uint32_t)f & 0x7fffffffu, __ATOMIC_RELAXED);
    e->native = NULL;
    e->next = fh_tl[slot].head; fh_tl[slot].head = (int)((uint32_t)f & t->mask);
    if (SHIM_UNLIKELY(++fh_tl[slot].n > 4 * HT_BATCH)) fh_spill(t, slot);   /* give half back to the table */
}
/* native predefined handle (< 0x%(top)x) -> foreign */
static const int shim_hout[0x%(top)x] = {''' % {'bad': 0xfff, 'top': top})
        for v in sorted(hout):
            w('    [0x%x] = (int)0x%08x,' % (v, hout[v]))
        w('};')
        slot = {'MPI_Request': 0, 'MPI_Message': 1}
        self.ht_inits = []
        w('struct shim_pre { uint32_t f; void *n; };   /* predefined handles: foreign, native */')
        names = []
        for t, k in kinds.items():
            s = t[4:]
            names.append(s)
            fast = t in slot
            if fast:
                self.ht_inits.append('    fh_setup(&fh_%s, 0x%08xu);' % (s, (2 << 30) | (k << 26)))
            else:
                # zero-initialized (.bss: the chunk pointers take 128 KiB a type), set up by ht_init
                w('static struct ht ht_%s;' % s)
                self.ht_inits.append('    ht_setup(&ht_%s, 0x%08xu, 0);' % (s, (2 << 30) | (k << 26)))
            # predefined: a perfect hash (multiplier searched here) into a table of {foreign, native}
            vals = sorted(fin[t])
            bits, mul = self.perfect_hash(vals)
            slots = {((v * mul) & 0xffffffff) >> (32 - bits): v for v in vals}
            w('static const struct shim_pre shim_pre_%s[%d] = {' % (s, 1 << bits))
            for i in range(1 << bits):
                v = slots.get(i)
                if v is None:
                    w('    { 0xffffffffu, SHIM_BAD },')
                else:
                    w('    { 0x%08xu, (void *)0x%x },   /* %s */' % (v, fin[t][v][1], fin[t][v][0]))
            w('};')
            pre = ('    const struct shim_pre *e = &shim_pre_%s[((uint32_t)f * 0x%08xu) >> %d];\n'
                   '    return SHIM_LIKELY(e->f == (uint32_t)f) ? e->n : SHIM_BAD;\n}' % (s, mul, 32 - bits))
            if fast:
                # the program's own objects first: one load and one compare
                w('static __attribute__((noinline)) void *h_pre_%s(int f)\n{\n%s' % (s, pre))
                w('static inline __attribute__((always_inline)) void *h_in_%s(int f)\n{' % s)
                w('    const struct fh_ent *e = fh_ent(&fh_%s, f);' % s)
                w('    if (SHIM_LIKELY(e != NULL)) return e->native;')
                w('    return f == (int)0x%08x ? (void *)0x%x : h_pre_%s(f);   /* MPI_%s_NULL */\n}'
                  % (self.fval('MPI_%s_NULL' % s.upper()) & 0xffffffff, self.nval('MPI_%s_NULL' % s.upper()), s, s.upper()))
            else:
                w('static inline __attribute__((always_inline)) void *h_in_%s(int f)\n{' % s)
                w('    if (SHIM_LIKELY(((unsigned)f >> 26) == 0x%x) && ((unsigned)f & 0x3ffffff) >= HT_FIRST) return ht_get(&ht_%s, f);' % (0x20 | k, s))
                w(pre)
            if fast:
                new = 'fh_new(&fh_%s, %d, n)' % (s, slot[t])
                rel = 'fh_release(&fh_%s, %d, f)' % (s, slot[t])
                peek = new
            else:
                new = 'ht_out(&ht_%s, n, 1)' % s
                rel = 'if (((unsigned)f >> 26) == 0x%x && ((unsigned)f & 0x3ffffff) >= HT_FIRST) ht_release(&ht_%s, f)' % (0x20 | k, s)
                peek = 'ht_out(&ht_%s, n, 0)' % s
            # fast kinds: a request or message that Kumi completed or freed (set to its null
            # handle) goes back at once, without looking the old handle up twice
            nnull = self.nval('MPI_%s_NULL' % s.upper())
            fnull = self.fval('MPI_%s_NULL' % s.upper()) & 0xffffffff
            null = ('''    if ((uintptr_t)n == 0x%x) {   /* MPI_%s_NULL */
        if (f != (int)0x%08x) { %s; *p = (int)0x%08x; }
        return;
    }
''' % (nnull, s.upper(), fnull, rel, fnull)) if fast else ''
            w('''static inline %(inl)sint h_out_%(s)s(N_%(s)s n)
{
    if ((uintptr_t)n < 0x%(top)x) return shim_hout[(uintptr_t)n];
    return %(new)s;
}
static inline int h_peek_%(s)s(N_%(s)s n)
{
    if ((uintptr_t)n < 0x%(top)x) return shim_hout[(uintptr_t)n];
    return %(peek)s;
}
/* *p's object became n (an INOUT argument): where Kumi replaced it (freed: MPI_COMM_NULL,
 * MPI_REQUEST_NULL, ...), the old handle goes back to the table */
static inline __attribute__((always_inline)) void h_upd_%(s)s(int *p, N_%(s)s n)
{
    int f = *p;
%(null)s    if (SHIM_LIKELY(h_in_%(s)s(f) == (void *)n)) return;
    %(rel)s;
    *p = h_out_%(s)s(n);
}''' % {'s': s, 'top': top, 'new': new, 'peek': peek, 'rel': rel, 'null': null,
                'inl': '__attribute__((always_inline)) ' if fast else ''})
        fnull = self.nval('MPI_FILE_NULL')
        w('''/* generalized requests: MPI_Grequest_complete may come after MPI_Request_free (the program kept
 * a copy of the handle): mark 1 marks a generalized request, 2 one freed but not complete; the
 * entry goes back at MPI_Grequest_complete then (mark 3), else when completed by a wait or test */
static void ht_greq_mark(int f, int how)
{
    struct fh_ent *e = fh_ent(&fh_Request, f);
    if (!e) return;
    if (how == 1) e->next = 1;
    else if (how == 3 && e->next == 2) fh_release(&fh_Request, 0, f);
}
static void h_free_Request(int *p, N_Request n)
{
    int f = *p;
    struct fh_ent *e = fh_ent(&fh_Request, f);
    if (e && e->next == 1 && e->native != (void *)n) {
        e->next = 2;
        *p = h_out_Request(n);
        return;
    }
    h_upd_Request(p, n);
}
static inline void *h_in_File(void *f) { return f ? f : (void *)0x%x; }
static inline void *h_out_File(N_File n) { return (uintptr_t)n == 0x%x ? NULL : (void *)n; }
static inline void *h_peek_File(N_File n) { return h_out_File(n); }
static inline void h_upd_File(void **p, N_File n) { *p = h_out_File(n); }''' % (fnull, fnull))
        w('''static void ht_thread_end(void *unused)
{
    struct fh *t[2] = { &fh_Request, &fh_Message };
    for (int s = 0; s < 2; s++) {
        if (!t[s]->tab) continue;
        pthread_mutex_lock(&t[s]->lock);
        while (fh_tl[s].head >= 0) {
            int j = fh_tl[s].head;
            fh_tl[s].head = t[s]->tab[j].next;
            t[s]->tab[j].next = t[s]->free_head; t[s]->free_head = j; t[s]->nfree++;
        }
        fh_tl[s].n = 0;
        pthread_mutex_unlock(&t[s]->lock);
    }
}
/* a flat table of 2^22 entries (64 MiB of address space, pages used as entries are), smaller if
 * that much address space is refused */
static struct fh_ent fh_none[HT_FIRST + 1];
static void fh_setup(struct fh *t, unsigned base)
{
    pthread_mutex_init(&t->lock, NULL);
    t->free_head = -1;
    t->base = base;
    for (unsigned b = 22; b >= 12; b -= 2) {
        void *m = mmap(NULL, sizeof(struct fh_ent) << b, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) continue;
        t->tab = m;
        t->bits = b;
        t->mask = (1u << b) - 1;
        break;
    }
    if (!t->tab) {   /* no handles of this kind can be made (each is invalid): lookups still work */
        t->tab = fh_none;
        t->bits = 6;
        t->mask = HT_FIRST - 1;
    }
    t->gen_one = t->mask + 1;
    t->gen_mask = 0x3ffffffu & ~t->mask;
    t->tab[0].f = 0xffffffffu;   /* 0 (an unset handle) is none */
}
static void ht_setup(struct ht *t, unsigned base, int fast)
{
    pthread_mutex_init(&t->lock, NULL);
    t->free_head = -1;
    t->base = base;
    t->fast = fast;
}
__attribute__((constructor)) static void ht_init(void)
{
%s
    pthread_key_create(&ht_key, ht_thread_end);
}''' % '\n'.join(self.ht_inits))

    def object_handles(self, w):
        # predefined objects
        w('/* ---- predefined objects: one per foreign handle constant that is the address of one */')
        w('struct shim_obj { uint64_t magic; void *native; };')
        hout = {}
        nobj = 0
        for name, c in sorted(self.fc.items()):
            if 'symbol' not in c or c['type'] not in HANDLE_TYPES:
                continue
            sym = c['symbol']
            size = self.fobjects.get(sym)
            if size is None:
                sys.exit('mkshim: %s: symbol %s is no object of %s' % (name, sym, self.facts['library']))
            nv = self.nval(name)
            if nv in hout:
                continue   # an alias (MPI_LONG_LONG_INT): the same object
            hout[nv] = sym
            w('SHIM_EXPORT struct { uint64_t magic; void *native; char pad[%d]; } %s = { SHIM_MAGIC, (void *)0x%x, {0} };'
              % (size - 16, sym, nv))
            nobj += 1
        self.nobj = nobj
        top = max(hout) + 1
        w('')
        w('/* native predefined handle (< 0x%x) -> foreign: the object, or the value itself where the' % top)
        w(' * foreign ABI has no such constant (then it comes back as is). */')
        w('static void *const shim_hout[0x%x] = {' % top)
        for v in range(top):
            if v in hout:
                w('    [0x%x] = &%s,' % (v, hout[v]))
            else:
                w('    [0x%x] = (void *)0x%x,' % (v, v))
        w('};')
        w('''
static inline void *h_in(void *f)
{
    const struct shim_obj *o = f;
    if (SHIM_LIKELY((uintptr_t)f >= 0x1000) && o->magic == SHIM_MAGIC) return o->native;
    return f;   /* Kumi's own object (created by the program), or invalid */
}
static inline void *h_out(void *n)
{
    if ((uintptr_t)n < 0x%x) return shim_hout[(uintptr_t)n];
    return n;
}''' % top)
