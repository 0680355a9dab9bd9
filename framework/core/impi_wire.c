/* The IMPI wire format (kumi/impi.h): start-up frames, labels, the job
 * tables built from the label replies, host identifiers and the packet
 * header.  Pure functions on byte buffers: no I/O, no allocation except the
 * job tables, nothing but libc (tests/scripts/impi_wire_asan.sh builds this
 * file alone with the sanitizers).  Facts: ../shared/impi/PROTOCOL.md. */
#include <kumi/impi.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return KUMI_IMPI_BAD;
}

static int popcount32(uint32_t v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* ---- names and label facts ---- */

const char *kumi_impi_cmd_name(uint32_t cmd)
{
    switch (cmd) {
    case KUMI_IMPI_CMD_AUTH: return "AUTH";
    case KUMI_IMPI_CMD_IMPI: return "IMPI";
    case KUMI_IMPI_CMD_COLL: return "COLL";
    case KUMI_IMPI_CMD_DONE: return "DONE";
    case KUMI_IMPI_CMD_FINI: return "FINI";
    }
    return NULL;
}

static const struct {
    uint32_t label;
    const char *name;
    char scope;
    unsigned char elem;
} labels[KUMI_IMPI_NLABELS] = {
    { KUMI_IMPI_C_VERSION, "C_VERSION", 'C', 8 },
    { KUMI_IMPI_C_NHOSTS, "C_NHOSTS", 'C', 4 },
    { KUMI_IMPI_C_NPROCS, "C_NPROCS", 'C', 4 },
    { KUMI_IMPI_C_DATALEN, "C_DATALEN", 'C', 4 },
    { KUMI_IMPI_C_TAGUB, "C_TAGUB", 'C', 4 },
    { KUMI_IMPI_C_COLL_XSIZE, "C_COLL_XSIZE", 'C', 4 },
    { KUMI_IMPI_C_COLL_MAXLINEAR, "C_COLL_MAXLINEAR", 'C', 4 },
    { KUMI_IMPI_H_IPV6, "H_IPV6", 'H', 16 },
    { KUMI_IMPI_H_PORT, "H_PORT", 'H', 4 },
    { KUMI_IMPI_H_NPROCS, "H_NPROCS", 'H', 4 },
    { KUMI_IMPI_H_ACKMARK, "H_ACKMARK", 'H', 4 },
    { KUMI_IMPI_H_HIWATER, "H_HIWATER", 'H', 4 },
    { KUMI_IMPI_P_IPV6, "P_IPV6", 'P', 16 },
    { KUMI_IMPI_P_PID, "P_PID", 'P', 8 },
};

const uint32_t kumi_impi_label_order[KUMI_IMPI_NLABELS] = {
    KUMI_IMPI_C_VERSION, KUMI_IMPI_C_NHOSTS, KUMI_IMPI_C_NPROCS, KUMI_IMPI_C_DATALEN,
    KUMI_IMPI_C_TAGUB, KUMI_IMPI_C_COLL_XSIZE, KUMI_IMPI_C_COLL_MAXLINEAR,
    KUMI_IMPI_H_IPV6, KUMI_IMPI_H_PORT, KUMI_IMPI_H_NPROCS, KUMI_IMPI_H_ACKMARK, KUMI_IMPI_H_HIWATER,
    KUMI_IMPI_P_IPV6, KUMI_IMPI_P_PID,
};

static int label_index(uint32_t label)
{
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++)
        if (labels[i].label == label)
            return i;
    return -1;
}

const char *kumi_impi_label_name(uint32_t label)
{
    int i = label_index(label);
    return i < 0 ? NULL : labels[i].name;
}

int kumi_impi_label_info(uint32_t label, int *scope, size_t *elem)
{
    int i = label_index(label);
    if (i < 0)
        return -1;
    if (scope)
        *scope = labels[i].scope;
    if (elem)
        *elem = labels[i].elem;
    return 0;
}

const char *kumi_impi_packet_type_name(uint32_t type)
{
    static const char *const names[] = { "DATA", "DATASYNC", "PROTOACK", "SYNCACK",
                                         "CANCEL", "CANCELYES", "CANCELNO", "FINI" };
    return type < 8 ? names[type] : NULL;
}

int kumi_impi_label_check(uint32_t label, size_t n, uint32_t count, char *err, size_t errlen)
{
    int i = label_index(label);
    if (i < 0)
        return fail(err, errlen, "unknown label 0x%x", label);
    size_t e = labels[i].elem;
    const char *nm = labels[i].name;
    if (label == KUMI_IMPI_C_VERSION) {
        if (n < e || n % e)
            return fail(err, errlen, "label %s: %zu bytes, not one or more 8-byte versions", nm, n);
        return 0;
    }
    if (labels[i].scope == 'C') {
        if (n != e)
            return fail(err, errlen, "label %s: %zu bytes, expected %zu", nm, n, e);
        return 0;
    }
    if (n == 0 || n % e)
        return fail(err, errlen, "label %s: %zu bytes, not one or more elements of %zu bytes", nm, n, e);
    if (count && n != (size_t)count * e)
        return fail(err, errlen, "label %s: %zu bytes, expected %u %s of %zu bytes", nm, n, count,
                    labels[i].scope == 'H' ? "hosts" : "procs", e);
    return 0;
}

/* ---- start-up frames ---- */

int kumi_impi_frame_parse(const uint8_t *buf, size_t avail, int dir, size_t maxpayload,
                          struct kumi_impi_frame *f, char *err, size_t errlen)
{
    if (!maxpayload || maxpayload > KUMI_IMPI_MAX_PAYLOAD)
        maxpayload = KUMI_IMPI_MAX_PAYLOAD;
    if (dir != KUMI_IMPI_C2S && dir != KUMI_IMPI_S2C)
        return fail(err, errlen, "bad direction %d", dir);
    memset(f, 0, sizeof *f);
    if (avail < 4)
        return KUMI_IMPI_MORE;
    uint32_t cmd = kumi_impi_get32(buf);
    const char *nm = kumi_impi_cmd_name(cmd);
    if (!nm)
        return fail(err, errlen, "unknown command 0x%08x", cmd);
    if (dir == KUMI_IMPI_S2C && (cmd == KUMI_IMPI_CMD_AUTH || cmd == KUMI_IMPI_CMD_FINI))
        return fail(err, errlen, "command %s is never sent by a server", nm);
    if (avail < KUMI_IMPI_CMD_HDR)
        return KUMI_IMPI_MORE;
    uint32_t len = kumi_impi_get32(buf + 4);
    f->cmd = cmd;
    f->len = len;
    switch (cmd) {
    case KUMI_IMPI_CMD_AUTH:
        if (len != 4 && len != 8)
            return fail(err, errlen, "AUTH with %u payload bytes (4: mechanism mask, 8: key)", len);
        break;
    case KUMI_IMPI_CMD_IMPI:
        if (len != 4)
            return fail(err, errlen, "IMPI with %u payload bytes, expected 4", len);
        break;
    case KUMI_IMPI_CMD_COLL: {
        uint32_t hdr = dir == KUMI_IMPI_C2S ? 4 : 8;
        if (len < hdr)
            return fail(err, errlen, "COLL with %u payload bytes, less than its %u-byte label header", len, hdr);
        if (len - hdr > maxpayload)
            return fail(err, errlen, "COLL with %u payload bytes, more than the limit %zu", len, maxpayload);
        break;
    }
    case KUMI_IMPI_CMD_DONE:
        if (dir == KUMI_IMPI_C2S && len != 0)
            return fail(err, errlen, "DONE with %u payload bytes, expected 0", len);
        if (len > maxpayload)
            return fail(err, errlen, "DONE with %u payload bytes, more than the limit %zu", len, maxpayload);
        break;
    case KUMI_IMPI_CMD_FINI:
        if (len != 0)
            return fail(err, errlen, "FINI with %u payload bytes, expected 0", len);
        break;
    }
    /* the label, as soon as it is there: an unknown one is refused early */
    if (cmd == KUMI_IMPI_CMD_COLL && avail >= 12) {
        uint32_t label = kumi_impi_get32(buf + 8);
        if (label_index(label) < 0)
            return fail(err, errlen, "COLL with unknown label 0x%x", label);
    }
    if (avail - KUMI_IMPI_CMD_HDR < len)
        return KUMI_IMPI_MORE;
    const uint8_t *p = buf + KUMI_IMPI_CMD_HDR;
    switch (cmd) {
    case KUMI_IMPI_CMD_AUTH:
        if (len == 8) {
            f->auth_oldkey = 1;
            f->auth_key = kumi_impi_get64(p);
        } else {
            f->auth_mask = kumi_impi_get32(p);
            if (!(f->auth_mask & KUMI_IMPI_AUTH_MASK_ALL))
                return fail(err, errlen, "AUTH mask 0x%x offers neither NONE (bit 0) nor KEY (bit 1)",
                            f->auth_mask);
        }
        break;
    case KUMI_IMPI_CMD_IMPI:
        f->value = (int32_t)kumi_impi_get32(p);
        if (dir == KUMI_IMPI_C2S && (f->value < 0 || f->value >= KUMI_IMPI_MAX_CLIENTS))
            return fail(err, errlen, "IMPI with client rank %d, not in 0..%d", f->value, KUMI_IMPI_MAX_CLIENTS - 1);
        if (dir == KUMI_IMPI_S2C && (f->value < 1 || f->value > KUMI_IMPI_MAX_CLIENTS))
            return fail(err, errlen, "IMPI with %d clients, not in 1..%d", f->value, KUMI_IMPI_MAX_CLIENTS);
        break;
    case KUMI_IMPI_CMD_COLL:
        f->label = kumi_impi_get32(p);
        if (dir == KUMI_IMPI_C2S) {
            f->data = p + 4;
            f->ndata = len - 4;
            if (kumi_impi_label_check(f->label, f->ndata, 0, err, errlen) != 0)
                return KUMI_IMPI_BAD;
        } else {
            f->mask = kumi_impi_get32(p + 4);
            f->data = p + 8;
            f->ndata = len - 8;
            int k = popcount32(f->mask), scope;
            size_t e;
            kumi_impi_label_info(f->label, &scope, &e);
            const char *ln = kumi_impi_label_name(f->label);
            if (f->ndata % e)
                return fail(err, errlen, "COLL reply for %s: %zu bytes, not whole %zu-byte elements", ln, f->ndata, e);
            if (!k && f->ndata)
                return fail(err, errlen, "COLL reply for %s: %zu bytes but no client in the mask", ln, f->ndata);
            if (scope == 'C' && f->label != KUMI_IMPI_C_VERSION && f->ndata != (size_t)k * e)
                return fail(err, errlen, "COLL reply for %s: %zu bytes for %d clients", ln, f->ndata, k);
            if (f->ndata < (size_t)k * e)
                return fail(err, errlen, "COLL reply for %s: %zu bytes for %d clients", ln, f->ndata, k);
        }
        break;
    }
    return (int)(KUMI_IMPI_CMD_HDR + len);
}

size_t kumi_impi_enc_cmd(uint8_t out[8], uint32_t cmd, uint32_t len)
{
    kumi_impi_put32(out, cmd);
    kumi_impi_put32(out + 4, len);
    return 8;
}

size_t kumi_impi_enc_auth(uint8_t out[12], uint32_t mask)
{
    kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_AUTH, 4);
    kumi_impi_put32(out + 8, mask);
    return 12;
}

size_t kumi_impi_enc_impi(uint8_t out[12], int32_t v)
{
    kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_IMPI, 4);
    kumi_impi_put32(out + 8, (uint32_t)v);
    return 12;
}

size_t kumi_impi_enc_coll_hdr(uint8_t out[16], int dir, uint32_t label, uint32_t mask, size_t n)
{
    if (dir == KUMI_IMPI_C2S) {
        kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_COLL, (uint32_t)(4 + n));
        kumi_impi_put32(out + 8, label);
        return 12;
    }
    kumi_impi_enc_cmd(out, KUMI_IMPI_CMD_COLL, (uint32_t)(8 + n));
    kumi_impi_put32(out + 8, label);
    kumi_impi_put32(out + 12, mask);
    return 16;
}

size_t kumi_impi_enc_server_auth(uint8_t out[8], int32_t which, int32_t len)
{
    kumi_impi_put32(out, (uint32_t)which);
    kumi_impi_put32(out + 4, (uint32_t)len);
    return 8;
}

int kumi_impi_dec_server_auth(const uint8_t in[8], uint32_t offered, int32_t *which, int32_t *len,
                              char *err, size_t errlen)
{
    int32_t w = (int32_t)kumi_impi_get32(in);
    if (len)
        *len = (int32_t)kumi_impi_get32(in + 4);
    if (which)
        *which = w;
    if (w != KUMI_IMPI_AUTH_NONE && w != KUMI_IMPI_AUTH_KEY)
        return fail(err, errlen, "the server chose authentication mechanism %d, neither NONE (0) nor KEY (1)", w);
    if (offered && !(offered & (1u << w)))
        return fail(err, errlen, "the server chose mechanism %s, which this client did not offer (mask 0x%x)",
                    w == KUMI_IMPI_AUTH_KEY ? "KEY" : "NONE", offered);
    return 0;
}

int kumi_impi_parse_key(const char *text, uint64_t *key)
{
    if (!text || !*text || *text == '+' || *text == ' ')
        return -1;
    char *end;
    errno = 0;
    if (*text == '-') {                /* LAM reads IMPI_AUTH_KEY with atoll: a negative key is its bits */
        long long v = strtoll(text, &end, 10);
        if (errno || *end || end == text + 1)
            return -1;
        *key = (uint64_t)v;
        return 0;
    }
    unsigned long long v = strtoull(text, &end, 0);
    if (errno || *end || end == text)
        return -1;
    *key = v;
    return 0;
}

/* ---- host identifiers ---- */

void kumi_impi_hostid_set(uint8_t id[16], int family, const void *addr)
{
    memset(id, 0, 16);
    if (family == AF_INET)
        memcpy(id + 12, addr, 4);      /* IPv4-compatible, as LAM */
    else
        memcpy(id, addr, 16);
}

int kumi_impi_hostid_get(const uint8_t id[16], void *addr)
{
    static const uint8_t zero[12];
    if (!memcmp(id, zero, 12) || (!memcmp(id, zero, 10) && id[10] == 0xff && id[11] == 0xff)) {
        /* :: and ::1 stay IPv6 */
        if (!memcmp(id, zero, 12) && !id[12] && !id[13] && !id[14] && id[15] <= 1) {
            memcpy(addr, id, 16);
            return AF_INET6;
        }
        memcpy(addr, id + 12, 4);
        return AF_INET;
    }
    memcpy(addr, id, 16);
    return AF_INET6;
}

/* ---- my contribution ---- */

size_t kumi_impi_label_encode(uint32_t label, const struct kumi_impi_mine *m, uint8_t *out)
{
    int scope;
    size_t e;
    if (kumi_impi_label_info(label, &scope, &e) != 0)
        return 0;
    if (label == KUMI_IMPI_C_VERSION) {
        if (out)
            memset(out, 0, 8);         /* the one version there is: 0.0 */
        return 8;
    }
    size_t cnt = scope == 'C' ? 1 : scope == 'H' ? (size_t)m->nhosts : (size_t)m->nprocs;
    if (!out)
        return cnt * e;
    for (size_t i = 0; i < cnt; i++) {
        uint8_t *p = out + i * e;
        const struct kumi_impi_host *h = scope == 'H' ? &m->hosts[i] : NULL;
        const struct kumi_impi_proc *pr = scope == 'P' ? &m->procs[i] : NULL;
        switch (label) {
        case KUMI_IMPI_C_NHOSTS: kumi_impi_put32(p, (uint32_t)m->nhosts); break;
        case KUMI_IMPI_C_NPROCS: kumi_impi_put32(p, (uint32_t)m->nprocs); break;
        case KUMI_IMPI_C_DATALEN: kumi_impi_put32(p, (uint32_t)m->datalen); break;
        case KUMI_IMPI_C_TAGUB: kumi_impi_put32(p, (uint32_t)m->tagub); break;
        case KUMI_IMPI_C_COLL_XSIZE: kumi_impi_put32(p, (uint32_t)m->xsize); break;
        case KUMI_IMPI_C_COLL_MAXLINEAR: kumi_impi_put32(p, (uint32_t)m->maxlinear); break;
        case KUMI_IMPI_H_IPV6: memcpy(p, h->id, 16); break;
        case KUMI_IMPI_H_PORT: kumi_impi_put32(p, (uint32_t)h->port); break;
        case KUMI_IMPI_H_NPROCS: kumi_impi_put32(p, (uint32_t)h->nprocs); break;
        case KUMI_IMPI_H_ACKMARK: kumi_impi_put32(p, h->ackmark); break;
        case KUMI_IMPI_H_HIWATER: kumi_impi_put32(p, h->hiwater); break;
        case KUMI_IMPI_P_IPV6: memcpy(p, pr->id, 16); break;
        case KUMI_IMPI_P_PID: kumi_impi_put64(p, (uint64_t)pr->pid); break;
        }
    }
    return cnt * e;
}

/* ---- the job, from the replies ---- */

#define JOB_MAX_COUNT (1 << 22)     /* hosts or procs of one client: a guard, not a protocol limit */

static int order_index(uint32_t label)
{
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++)
        if (kumi_impi_label_order[i] == label)
            return i;
    return -1;
}

static int job_c_label(struct kumi_impi_job *job, uint32_t label, const uint8_t *d, char *err, size_t errlen)
{
    const char *ln = kumi_impi_label_name(label);
    long long sum = 0;
    for (int c = 0; c < job->nclients; c++) {
        int32_t v = (int32_t)kumi_impi_get32(d + 4 * c);
        switch (label) {
        case KUMI_IMPI_C_NHOSTS:
        case KUMI_IMPI_C_NPROCS:
            if (v < 1 || v > JOB_MAX_COUNT)
                return fail(err, errlen, "label %s: client %d announces %d, not in 1..%d", ln, c, v, JOB_MAX_COUNT);
            sum += v;
            (label == KUMI_IMPI_C_NHOSTS ? job->c_nhosts : job->c_nprocs)[c] = v;
            break;
        case KUMI_IMPI_C_DATALEN:
            if (v < KUMI_IMPI_MIN_DATALEN)
                return fail(err, errlen, "label %s: client %d announces %d, less than %d", ln, c, v,
                            KUMI_IMPI_MIN_DATALEN);
            job->c_datalen[c] = v;
            break;
        case KUMI_IMPI_C_TAGUB:
            if (v < KUMI_IMPI_MIN_TAG_UB)
                return fail(err, errlen, "label %s: client %d announces %d, less than %d", ln, c, v,
                            KUMI_IMPI_MIN_TAG_UB);
            job->c_tagub[c] = v;
            break;
        case KUMI_IMPI_C_COLL_XSIZE:
        case KUMI_IMPI_C_COLL_MAXLINEAR:
            if (v < -1)
                return fail(err, errlen, "label %s: client %d announces %d (>= 0, or -1 for the default)", ln, c, v);
            (label == KUMI_IMPI_C_COLL_XSIZE ? job->c_xsize : job->c_maxlinear)[c] = v;
            break;
        }
    }
    if (sum > JOB_MAX_COUNT)
        return fail(err, errlen, "label %s: %lld in all, more than %d", ln, sum, JOB_MAX_COUNT);
    if (label == KUMI_IMPI_C_NHOSTS)
        job->nhosts = (int)sum;
    if (label == KUMI_IMPI_C_NPROCS)
        job->nprocs = (int)sum;
    return 0;
}

/* Split the concatenated version lists: each client's list is strictly
 * ascending and lists 0.0, the smallest version, so it starts with 0.0 and
 * a new list starts wherever a record is not above the one before. */
static int job_versions(struct kumi_impi_job *job, const uint8_t *d, size_t n, char *err, size_t errlen)
{
    size_t nrec = n / 8;
    int c = -1;
    uint64_t prev = 0;
    for (size_t i = 0; i < nrec; i++) {
        uint32_t maj = kumi_impi_get32(d + 8 * i), min = kumi_impi_get32(d + 8 * i + 4);
        uint64_t v = (uint64_t)maj << 32 | min;
        if (c < 0 || v <= prev) {
            if (v != 0)
                return fail(err, errlen, "label C_VERSION: the list of client %d does not start with 0.0 "
                            "(record %zu is %u.%u)", c + 1, i, maj, min);
            if (++c >= job->nclients)
                return fail(err, errlen, "label C_VERSION: more version lists than the %d clients", job->nclients);
        }
        if (maj == 0)
            job->c_version_max_minor[c] = min;
        prev = v;
    }
    if (c + 1 != job->nclients)
        return fail(err, errlen, "label C_VERSION: %d version lists for %d clients", c + 1, job->nclients);
    return 0;
}

int kumi_impi_job_add(struct kumi_impi_job *job, uint32_t label, uint32_t mask, const uint8_t *data, size_t n,
                      char *err, size_t errlen)
{
    int oi = order_index(label), scope;
    size_t e;
    const char *ln = kumi_impi_label_name(label);
    if (oi < 0)
        return fail(err, errlen, "unknown label 0x%x", label);
    kumi_impi_label_info(label, &scope, &e);
    if (job->nclients < 1 || job->nclients > KUMI_IMPI_MAX_CLIENTS)
        return fail(err, errlen, "job of %d clients", job->nclients);
    uint32_t all = job->nclients == 32 ? 0xffffffffu : (1u << job->nclients) - 1;
    if (mask != all)
        return fail(err, errlen, "label %s: client mask 0x%x, expected 0x%x (every client contributes every "
                    "label in IMPI 0.0)", ln, mask, all);
    if (job->seen & (1u << oi))
        return fail(err, errlen, "label %s came twice", ln);
    if (label == KUMI_IMPI_C_VERSION) {
        if (n % 8 || job_versions(job, data, n, err, errlen) != 0)
            return n % 8 ? fail(err, errlen, "label C_VERSION: %zu bytes", n) : KUMI_IMPI_BAD;
    } else if (scope == 'C') {
        if (n != 4u * (size_t)job->nclients)
            return fail(err, errlen, "label %s: %zu bytes for %d clients, expected %d", ln, n, job->nclients,
                        4 * job->nclients);
        if (job_c_label(job, label, data, err, errlen) != 0)
            return KUMI_IMPI_BAD;
    } else {
        uint32_t need = scope == 'H' ? KUMI_IMPI_C_NHOSTS : KUMI_IMPI_C_NPROCS;
        if (!(job->seen & (1u << order_index(need))))
            return fail(err, errlen, "label %s before %s", ln, kumi_impi_label_name(need));
        size_t cnt = scope == 'H' ? (size_t)job->nhosts : (size_t)job->nprocs;
        if (n != cnt * e)
            return fail(err, errlen, "label %s: %zu bytes, expected %zu (%zu %s of %zu bytes)", ln, n, cnt * e, cnt,
                        scope == 'H' ? "hosts" : "procs", e);
        if (scope == 'H' && !job->hosts && !(job->hosts = calloc(cnt, sizeof *job->hosts)))
            return fail(err, errlen, "out of memory for %zu hosts", cnt);
        if (scope == 'P' && !job->procs && !(job->procs = calloc(cnt, sizeof *job->procs)))
            return fail(err, errlen, "out of memory for %zu procs", cnt);
        for (size_t i = 0; i < cnt; i++) {
            const uint8_t *p = data + i * e;
            int32_t v = (int32_t)kumi_impi_get32(p);
            struct kumi_impi_host *h = scope == 'H' ? &job->hosts[i] : NULL;
            switch (label) {
            case KUMI_IMPI_H_IPV6: memcpy(h->id, p, 16); break;
            case KUMI_IMPI_H_PORT:
                if (v < 1 || v > 65535)
                    return fail(err, errlen, "label H_PORT: host %zu announces port %d", i, v);
                h->port = v;
                break;
            case KUMI_IMPI_H_NPROCS:
                if (v < 1)
                    return fail(err, errlen, "label H_NPROCS: host %zu announces %d procs", i, v);
                h->nprocs = v;
                break;
            case KUMI_IMPI_H_ACKMARK:
            case KUMI_IMPI_H_HIWATER:
                if (v < 1)
                    return fail(err, errlen, "label %s: host %zu announces %u (>= 1)", ln, i, (uint32_t)v);
                *(label == KUMI_IMPI_H_ACKMARK ? &h->ackmark : &h->hiwater) = (uint32_t)v;
                break;
            case KUMI_IMPI_P_IPV6: memcpy(job->procs[i].id, p, 16); break;
            case KUMI_IMPI_P_PID: job->procs[i].pid = (int64_t)kumi_impi_get64(p); break;
            }
        }
    }
    job->mask[oi] = mask;
    job->seen |= 1u << oi;
    return 0;
}

static int32_t agree(const int32_t *v, int n, int32_t dflt, const char *ln, char *err, size_t errlen, int *bad)
{
    int32_t first = v[0] == -1 ? dflt : v[0];
    for (int c = 1; c < n; c++) {
        int32_t x = v[c] == -1 ? dflt : v[c];
        if (x != first) {
            char list[KUMI_IMPI_MAX_CLIENTS * 14] = "";
            size_t off = 0;
            for (int k = 0; k < n && off < sizeof list; k++)
                off += (size_t)snprintf(list + off, sizeof list - off, "%s%d", k ? ", " : "",
                                        v[k] == -1 ? dflt : v[k]);
            *bad = 1;
            fail(err, errlen, "label %s: the clients disagree (%s; -1 counts as %d): IMPI needs one value",
                 ln, list, dflt);
            return 0;
        }
    }
    return first;
}

static int proc_cmp(const struct kumi_impi_proc *a, const uint8_t id[16], int64_t pid)
{
    int c = memcmp(a->id, id, 16);
    return c ? c : a->pid < pid ? -1 : a->pid > pid;
}

struct sortent {
    const struct kumi_impi_proc *p;
    int idx;
};

static int sort_cmp(const void *x, const void *y)
{
    const struct sortent *a = x, *b = y;
    int c = proc_cmp(a->p, b->p->id, b->p->pid);
    return c ? c : a->idx - b->idx;
}

/* proc_index: the procs ordered by (P_IPV6, P_PID); two equal pairs are refused */
static int index_procs(struct kumi_impi_job *job, char *err, size_t errlen)
{
    size_t n = (size_t)job->nprocs;
    struct sortent *t = malloc((n ? n : 1) * sizeof *t);
    free(job->proc_index);
    job->proc_index = malloc((n ? n : 1) * sizeof *job->proc_index);
    if (!t || !job->proc_index) {
        free(t);
        return fail(err, errlen, "out of memory for %zu procs", n);
    }
    for (size_t i = 0; i < n; i++)
        t[i] = (struct sortent){ &job->procs[i], (int)i };
    qsort(t, n, sizeof *t, sort_cmp);
    for (size_t i = 0; i < n; i++) {
        if (i && !proc_cmp(t[i - 1].p, t[i].p->id, t[i].p->pid)) {
            int a = t[i - 1].idx, b = t[i].idx;
            free(t);
            return fail(err, errlen, "procs %d and %d have the same P_IPV6 and P_PID %lld (a pid must be unique "
                        "among the procs of one P_IPV6)", a, b, (long long)job->procs[b].pid);
        }
        job->proc_index[i] = t[i].idx;
    }
    free(t);
    return 0;
}

int kumi_impi_job_find_proc(const struct kumi_impi_job *job, const uint8_t id[16], int64_t pid)
{
    if (!job->proc_index)
        return -1;
    int lo = 0, hi = job->nprocs - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, p = job->proc_index[mid];
        int c = proc_cmp(&job->procs[p], id, pid);
        if (!c)
            return p;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

int kumi_impi_job_proc_host(const struct kumi_impi_job *job, int p)
{
    if (!job->host_first_proc || p < 0 || p >= job->nprocs)
        return -1;
    int lo = 0, hi = job->nhosts - 1;  /* the last host whose first proc is <= p */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (job->host_first_proc[mid] <= p)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

int kumi_impi_job_host_client(const struct kumi_impi_job *job, int h)
{
    if (h < 0 || h >= job->nhosts)
        return -1;
    for (int c = 0; c < job->nclients; c++)
        if (h < job->first_host[c + 1])
            return c;
    return -1;
}

int kumi_impi_job_finish(struct kumi_impi_job *job, char *err, size_t errlen)
{
    for (int i = 0; i < KUMI_IMPI_NLABELS; i++)
        if (!(job->seen & (1u << i)))
            return fail(err, errlen, "label %s never came", kumi_impi_label_name(kumi_impi_label_order[i]));
    int bad = 0, n = job->nclients;
    job->xsize = agree(job->c_xsize, n, KUMI_IMPI_COLL_XSIZE_DEFAULT, "C_COLL_XSIZE", err, errlen, &bad);
    if (bad)
        return KUMI_IMPI_BAD;
    job->maxlinear = agree(job->c_maxlinear, n, KUMI_IMPI_COLL_MAXLINEAR_DEFAULT, "C_COLL_MAXLINEAR", err, errlen, &bad);
    if (bad)
        return KUMI_IMPI_BAD;
    job->pk_maxlen = job->c_datalen[0];
    job->tag_ub = job->c_tagub[0];
    for (int c = 1; c < n; c++) {
        if (job->c_datalen[c] < job->pk_maxlen)
            job->pk_maxlen = job->c_datalen[c];
        if (job->c_tagub[c] < job->tag_ub)
            job->tag_ub = job->c_tagub[c];
    }
    job->first_host[0] = job->first_proc_of_client[0] = 0;
    for (int c = 0; c < n; c++) {
        job->first_host[c + 1] = job->first_host[c] + job->c_nhosts[c];
        job->first_proc_of_client[c + 1] = job->first_proc_of_client[c] + job->c_nprocs[c];
    }
    free(job->host_first_proc);
    if (!(job->host_first_proc = malloc(((size_t)job->nhosts + 1) * sizeof *job->host_first_proc)))
        return fail(err, errlen, "out of memory");
    job->host_first_proc[0] = 0;
    job->ackmark = job->hiwater = 0;
    for (int h = 0; h < job->nhosts; h++) {
        const struct kumi_impi_host *x = &job->hosts[h];
        job->host_first_proc[h + 1] = job->host_first_proc[h] + x->nprocs;
        if (x->ackmark > x->hiwater)
            return fail(err, errlen, "host %d: ackmark %u above hiwater %u (1 <= ackmark <= hiwater)", h,
                        x->ackmark, x->hiwater);
        if (!h || x->ackmark < job->ackmark)
            job->ackmark = x->ackmark;
        if (!h || x->hiwater < job->hiwater)
            job->hiwater = x->hiwater;
    }
    for (int c = 0; c < n; c++) {
        long long s = job->host_first_proc[job->first_host[c + 1]] - job->host_first_proc[job->first_host[c]];
        if (s != job->c_nprocs[c])
            return fail(err, errlen, "client %d: its hosts have %lld procs (H_NPROCS), its C_NPROCS says %d", c, s,
                        job->c_nprocs[c]);
    }
    return index_procs(job, err, errlen);
}

void kumi_impi_job_free(struct kumi_impi_job *job)
{
    free(job->hosts);
    free(job->procs);
    free(job->host_first_proc);
    free(job->proc_index);
    job->proc_index = NULL;
    job->hosts = NULL;
    job->procs = NULL;
    job->host_first_proc = NULL;
}

/* ---- packet header ---- */

void kumi_impi_packet_encode(const struct kumi_impi_packet *pk, uint8_t out[128])
{
    kumi_impi_put32(out + 0, pk->type);
    kumi_impi_put32(out + 4, pk->len);
    memcpy(out + 8, pk->src_host, 16);
    kumi_impi_put64(out + 24, (uint64_t)pk->src_pid);
    memcpy(out + 32, pk->dest_host, 16);
    kumi_impi_put64(out + 48, (uint64_t)pk->dest_pid);
    kumi_impi_put64(out + 56, pk->srqid);
    kumi_impi_put64(out + 64, pk->drqid);
    kumi_impi_put64(out + 72, pk->msglen);
    kumi_impi_put32(out + 80, (uint32_t)pk->lsrank);
    kumi_impi_put32(out + 84, (uint32_t)pk->tag);
    kumi_impi_put64(out + 88, pk->cid);
    kumi_impi_put64(out + 96, pk->seqnum);
    kumi_impi_put64(out + 104, (uint64_t)pk->count);
    kumi_impi_put64(out + 112, pk->dtype);
    kumi_impi_put64(out + 120, pk->reserved);
}

int kumi_impi_packet_parse(const uint8_t *buf, size_t avail, uint32_t maxdata, struct kumi_impi_packet *pk,
                           char *err, size_t errlen)
{
    memset(pk, 0, sizeof *pk);
    if (avail >= 4 && kumi_impi_get32(buf) > KUMI_IMPI_PK_FINI)
        return fail(err, errlen, "unknown packet type %u", kumi_impi_get32(buf));
    if (avail < KUMI_IMPI_PACKET_SIZE)
        return KUMI_IMPI_MORE;
    pk->type = kumi_impi_get32(buf);
    pk->len = kumi_impi_get32(buf + 4);
    memcpy(pk->src_host, buf + 8, 16);
    pk->src_pid = (int64_t)kumi_impi_get64(buf + 24);
    memcpy(pk->dest_host, buf + 32, 16);
    pk->dest_pid = (int64_t)kumi_impi_get64(buf + 48);
    pk->srqid = kumi_impi_get64(buf + 56);
    pk->drqid = kumi_impi_get64(buf + 64);
    pk->msglen = kumi_impi_get64(buf + 72);
    pk->lsrank = (int32_t)kumi_impi_get32(buf + 80);
    pk->tag = (int32_t)kumi_impi_get32(buf + 84);
    pk->cid = kumi_impi_get64(buf + 88);
    pk->seqnum = kumi_impi_get64(buf + 96);
    pk->count = (int64_t)kumi_impi_get64(buf + 104);
    pk->dtype = kumi_impi_get64(buf + 112);
    pk->reserved = kumi_impi_get64(buf + 120);
    if (pk->type == KUMI_IMPI_PK_DATA || pk->type == KUMI_IMPI_PK_DATASYNC) {
        if (maxdata && pk->len > maxdata)
            return fail(err, errlen, "%s packet of %u data bytes, more than the agreed maximum %u",
                        kumi_impi_packet_type_name(pk->type), pk->len, maxdata);
        if (pk->len > pk->msglen)
            return fail(err, errlen, "%s packet of %u data bytes for a message of %llu bytes",
                        kumi_impi_packet_type_name(pk->type), pk->len, (unsigned long long)pk->msglen);
    }
    return (int)KUMI_IMPI_PACKET_SIZE;
}

uint32_t kumi_impi_packet_payload(const struct kumi_impi_packet *pk)
{
    return pk->type == KUMI_IMPI_PK_DATA || pk->type == KUMI_IMPI_PK_DATASYNC ? pk->len : 0;
}
