/* Point-to-point MPI functions, continued (mpi/pt2pt.c has the sends,
 * receives, matched receives and the wait / test family): MPI_Sendrecv,
 * MPI_Sendrecv_replace, MPI_Isendrecv(_replace), MPI_Probe, MPI_Iprobe,
 * MPI_Mprobe and MPI_Improbe. */
#include "mpi/pt2pt.h"
#include <string.h>

/* ------------------------------------------------------------ send-receive */
/* Device buffers (kumi_accel_on): the send and the receive get their host
 * copies as MPI_Isend and MPI_Irecv do (stage_nb, in the requests from their
 * start), so that a large message goes as they do: the send's copy filled
 * chunk by chunk while its pieces go, the receive's copied to the device as
 * the pieces arrive, or one device-to-device copy between processes of one
 * host (CUDA IPC; request/req_accel.c).  stage_done ends them (a receive:
 * what is not on the device yet is copied back). */
static int sr_stage(const char *fn, struct kumi_stage **ss, const void **sendbuf, MPI_Count sendcount,
                    const struct kumi_dt *sendtype, struct kumi_stage **rs, void **recvbuf, MPI_Count recvcount,
                    const struct kumi_dt *recvtype)
{
    int rc = stage_nb(fn, ss, *sendbuf, sendcount, sendtype, sendtype->contig ? 2 : 1);
    if (!rc) rc = stage_nb(fn, rs, *recvbuf, recvcount, recvtype, false);
    if (rc) { stage_drop(*ss); *ss = NULL; return rc; }
    if (*ss) *sendbuf = (*ss)->buf;
    if (*rs) { (*rs)->back = true; *recvbuf = (*rs)->buf; }
    return MPI_SUCCESS;
}

/* The send and the receive of a blocking send-receive: both run to their
 * end; the first error (the send's, then the receive's); the requests freed. */
static int sr_run(const char *fn, struct kumi_req *sr, struct kumi_req *rr, MPI_Status *status)
{
    int rc, rc2;
    rr->internal = sr->internal = true;
    rc = kumi_req_start_recv(rr);
    if (rc) { kumi_req_free(rr); kumi_req_free(sr); return rc; }
    rc = kumi_req_start_send(sr);
    if (rc) {
        kumi_req_cancel(rr);
        wait_req(rr);
        kumi_req_free(rr); kumi_req_free(sr);
        return rc;
    }
    wait_req(sr);
    wait_req(rr);
    rc = sr->status.MPI_ERROR;
    rc2 = rr->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(rr, fn);
    if (__builtin_expect(sr->accel_stage != NULL, 0)) rc = stage_done(sr, rc);
    if (__builtin_expect(rr->accel_stage != NULL, 0)) rc2 = stage_done(rr, rc2);   /* copied back */
    status_out(status, &rr->status);
    kumi_req_free(rr);
    kumi_req_free(sr);
    return rc ? rc : rc2;
}

int kumi_pt2pt_sendrecv(const char *fn, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype, int dest,
                        int sendtag, void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype, int source,
                        int recvtag, struct kumi_comm *comm, MPI_Status *status)
{
    int crc = count_check(fn, "sendcount", sendcount, sendtype);
    if (!crc) crc = count_check(fn, "recvcount", recvcount, recvtype);
    if (crc) return crc;
    struct kumi_stage *ss = NULL, *rs = NULL;       /* device buffers: host copies, one per request */
    if (__builtin_expect(kumi_accel_on, 0) &&
        (crc = sr_stage(fn, &ss, &sendbuf, sendcount, sendtype, &rs, &recvbuf, recvcount, recvtype)))
        return crc;
    struct kumi_req *rr = new_req(KUMI_REQ_RECV, fn, recvbuf, recvcount, recvtype, source, recvtag, comm);
    struct kumi_req *sr = new_req(KUMI_REQ_SEND, fn, (void *)sendbuf, sendcount, sendtype, dest, sendtag, comm);
    if (!rr || !sr) { kumi_req_free(rr); kumi_req_free(sr); stage_drop(ss); stage_drop(rs); return nomem(fn); }
    sr->accel_stage = ss;
    rr->accel_stage = rs;
    return sr_run(fn, sr, rr, status);
}

/* MPI_Sendrecv_replace on a contiguous device buffer: the message to send is
 * copied first into device memory of the library's (kumi_accel_scratch_take,
 * one device-to-device copy), and the call is then a send-receive from that
 * copy into buf, with its pieces and IPC.  *done false: not done (no scratch
 * memory or device-to-device copy, a type with gaps): the caller stages buf
 * whole. */
static int replace_dev(const char *fn, void *buf, MPI_Count count, struct kumi_dt *dt, int dest, int sendtag,
                       int source, int recvtag, struct kumi_comm *comm, MPI_Status *status, bool *done)
{
    *done = false;
    size_t bytes = (size_t)count * dt->size;
    if (!dt->contig || !bytes || !kumi_accel_is_device(buf)) return MPI_SUCCESS;
    void *scratch = kumi_accel_scratch_take(bytes);
    if (!scratch) return MPI_SUCCESS;
    if (kumi_accel_copy_dtod(scratch, (const char *)buf + dt->true_lb, bytes)) {
        kumi_accel_scratch_give(scratch);                /* staged whole instead */
        return MPI_SUCCESS;
    }
    *done = true;
    int rc = kumi_pt2pt_sendrecv(fn, (char *)scratch - dt->true_lb, count, dt, dest, sendtag, buf, count, dt, source,
                                 recvtag, comm, status);
    kumi_accel_scratch_give(scratch);
    return rc;
}

int kumi_pt2pt_sendrecv_replace(const char *fn, void *buf, MPI_Count count, struct kumi_dt *datatype, int dest,
                                int sendtag, int source, int recvtag, struct kumi_comm *comm, MPI_Status *status)
{
    int crc = count_check(fn, "count", count, datatype);
    if (crc) return crc;
    if (__builtin_expect(kumi_accel_on, 0)) {
        bool done;
        crc = replace_dev(fn, buf, count, datatype, dest, sendtag, source, recvtag, comm, status, &done);
        if (done) return crc;
        struct kumi_stage st;
        MPI_Status lst;
        if ((crc = kumi_stage_begin(fn, &st, buf, count, datatype, true))) return crc;
        if (st.host) {
            crc = kumi_pt2pt_sendrecv_replace(fn, st.buf, count, datatype, dest, sendtag, source, recvtag, comm, &lst);
            crc = stage_recv_end(&st, crc, datatype, &lst);
            if (status != MPI_STATUS_IGNORE) *status = lst;
            return crc;
        }
    }
    size_t bytes = (size_t)count * datatype->size;
    struct kumi_dt *bytet = kumi_dt_get(MPI_BYTE);
    void *tmp = NULL;
    int rc, rc2;
    if (!bytet) return kumi_error(MPI_ERR_INTERN, "%s: MPI_BYTE is not defined", fn);
    if (bytes) {
        tmp = malloc(bytes);
        if (!tmp) return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes)", fn, bytes);
        kumi_dt_pack(datatype, buf, (size_t)count, tmp);
    }
    struct kumi_req *sr = new_req(KUMI_REQ_SEND, fn, tmp, 0, bytet, dest, sendtag, comm);
    struct kumi_req *rr = new_req(KUMI_REQ_RECV, fn, buf, count, datatype, source, recvtag, comm);
    if (!rr || !sr) { kumi_req_free(rr); kumi_req_free(sr); free(tmp); return nomem(fn); }
    sr->count = bytes;
    rr->internal = sr->internal = true;
    rc = kumi_req_start_recv(rr);
    if (!rc) {
        rc = kumi_req_start_send(sr);
        if (rc) kumi_req_cancel(rr);
        else wait_req(sr);
    }
    wait_req(rr);
    rc2 = rr->status.MPI_ERROR == MPI_SUCCESS ? MPI_SUCCESS : req_error_code(rr, fn);
    if (!rc) rc = sr->status.MPI_ERROR;
    status_out(status, &rr->status);
    kumi_req_free(rr);
    kumi_req_free(sr);
    free(tmp);
    return rc ? rc : rc2;
}

/* MPI_Isendrecv(_replace): the receive is the user's request; the send is its
 * internal partner, and the receive completes when both are done. */
static int isendrecv(const char *fn, struct kumi_req *sr, struct kumi_req *rr, MPI_Request *request)
{
    sr->internal = true;
    sr->parent = rr;
    rr->partner = sr;
    int rc = kumi_req_start_recv(rr);
    if (!rc) {
        rc = kumi_req_start_send(sr);
        if (rc) {
            sr->complete = true;           /* failed to start: nothing in flight */
            kumi_req_cancel(rr);
        }
        /* the send may have completed at once (MPI_PROC_NULL) without telling its receive */
        kumi_req_check_complete(rr);
        if (rc) wait_req(rr);
    }
    if (rc) {
        kumi_req_free(rr);
        return rc;
    }
    *request = (MPI_Request)rr;
    return MPI_SUCCESS;
}

int kumi_pt2pt_isendrecv(const char *fn, const void *sendbuf, MPI_Count sendcount, struct kumi_dt *sendtype,
                         int dest, int sendtag, void *recvbuf, MPI_Count recvcount, struct kumi_dt *recvtype,
                         int source, int recvtag, struct kumi_comm *comm, MPI_Request *request)
{
    int crc = count_check(fn, "sendcount", sendcount, sendtype);
    if (!crc) crc = count_check(fn, "recvcount", recvcount, recvtype);
    if (crc) return crc;
    struct kumi_stage *ss = NULL, *rs = NULL;       /* device buffers: host copies, one per request */
    if (__builtin_expect(kumi_accel_on, 0)) {
        crc = stage_nb(fn, &ss, sendbuf, sendcount, sendtype, true);
        if (!crc) crc = stage_nb(fn, &rs, recvbuf, recvcount, recvtype, false);
        if (crc) { stage_drop(ss); return crc; }
        if (ss) sendbuf = ss->buf;
        if (rs) recvbuf = rs->buf;
    }
    struct kumi_req *sr = new_req(KUMI_REQ_SEND, fn, (void *)sendbuf, sendcount, sendtype, dest,
                                  sendtag, comm);
    struct kumi_req *rr = new_req(KUMI_REQ_RECV, fn, recvbuf, recvcount, recvtype, source,
                                  recvtag, comm);
    if (!rr || !sr) { kumi_req_free(rr); kumi_req_free(sr); stage_drop(ss); stage_drop(rs); return nomem(fn); }
    sr->accel_stage = ss;
    rr->accel_stage = rs;
    return isendrecv(fn, sr, rr, request);
}

int kumi_pt2pt_isendrecv_replace(const char *fn, void *buf, MPI_Count count, struct kumi_dt *datatype, int dest,
                                 int sendtag, int source, int recvtag, struct kumi_comm *comm, MPI_Request *request)
{
    int crc = count_check(fn, "count", count, datatype);
    if (crc) return crc;
    struct kumi_stage *rs = NULL;                   /* a device buffer: one host copy, packed from */
    if (__builtin_expect(kumi_accel_on, 0)) {
        if ((crc = stage_nb(fn, &rs, buf, count, datatype, true))) return crc;
        if (rs) buf = rs->buf;
    }
    size_t bytes = (size_t)count * datatype->size;
    struct kumi_dt *bytet = kumi_dt_get(MPI_BYTE);
    void *tmp = bytes ? malloc(bytes) : NULL;
    if (bytes && !tmp) {
        stage_drop(rs);
        return kumi_error(MPI_ERR_NO_MEM, "%s: out of memory (%zu bytes)", fn, bytes);
    }
    if (bytes) kumi_dt_pack(datatype, buf, (size_t)count, tmp);
    struct kumi_req *sr = new_req(KUMI_REQ_SEND, fn, tmp, 0, bytet, dest, sendtag, comm);
    struct kumi_req *rr = new_req(KUMI_REQ_RECV, fn, buf, count, datatype, source,
                                  recvtag, comm);
    if (!rr || !sr) { kumi_req_free(rr); kumi_req_free(sr); free(tmp); stage_drop(rs); return nomem(fn); }
    rr->accel_stage = rs;
    sr->count = bytes;
    rr->owned = tmp;                   /* the packed copy lives until the request is freed */
    return isendrecv(fn, sr, rr, request);
}


static void status_of_ue(const struct kumi_ue *u, MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE) return;
    status_empty_out(st);
    st->MPI_SOURCE = u->hdr.src;
    st->MPI_TAG = u->hdr.tag;
    kumi_status_set_bytes(st, u->hdr.len);
}



struct probe_arg { int32_t ctx; int src, tag; struct kumi_ue *u; };
static int probe_found(void *a)
{
    struct probe_arg *p = a;
    p->u = kumi_match_unexpected(p->ctx, p->src, p->tag, 0);
    return p->u != NULL;
}

static struct kumi_ue *probe(struct kumi_comm *comm, int source, int tag, bool block)
{
    struct probe_arg p = { comm->ctx, source, tag, NULL };
    if (probe_found(&p)) return p.u;
    if (block) { kumi_progress_wait(probe_found, &p); return p.u; }
    kumi_progress(0);
    probe_found(&p);
    return p.u;
}

int kumi_mpi_probe(int source, int tag, struct kumi_comm *comm, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) { status_proc_null(status); return MPI_SUCCESS; }
    status_of_ue(probe(comm, source, tag, true), status);
    return MPI_SUCCESS;
}

int kumi_mpi_iprobe(int source, int tag, struct kumi_comm *comm, int *flag, MPI_Status *status)
{
    if (source == MPI_PROC_NULL) { *flag = 1; status_proc_null(status); return MPI_SUCCESS; }
    struct kumi_ue *u = probe(comm, source, tag, false);
    *flag = u != NULL;
    if (u) status_of_ue(u, status);
    return MPI_SUCCESS;
}

static MPI_Message make_msg(struct kumi_comm *comm, struct kumi_ue *u, const char *fn, int *rc)
{
    struct kumi_msg *m = calloc(1, sizeof *m);
    *rc = MPI_SUCCESS;
    if (!m) { *rc = kumi_error(MPI_ERR_NO_MEM, "%s: out of memory", fn); return MPI_MESSAGE_NULL; }
    kumi_match_ue_remove(u);
    m->magic = KUMI_MAGIC_MSG;
    m->ue = u;
    m->comm = comm;
    comm->refcount++;
    return (MPI_Message)m;
}

int kumi_mpi_mprobe(int source, int tag, struct kumi_comm *comm, MPI_Message *message, MPI_Status *status)
{
    int rc;
    if (source == MPI_PROC_NULL) { status_proc_null(status); *message = MPI_MESSAGE_NO_PROC; return MPI_SUCCESS; }
    struct kumi_ue *u = probe(comm, source, tag, true);
    status_of_ue(u, status);
    *message = make_msg(comm, u, "MPI_Mprobe", &rc);
    return rc;
}

int kumi_mpi_improbe(int source, int tag, struct kumi_comm *comm, int *flag, MPI_Message *message,
                     MPI_Status *status)
{
    int rc = MPI_SUCCESS;
    if (source == MPI_PROC_NULL) {
        *flag = 1; status_proc_null(status); *message = MPI_MESSAGE_NO_PROC; return MPI_SUCCESS;
    }
    struct kumi_ue *u = probe(comm, source, tag, false);
    *flag = u != NULL;
    if (u) {
        status_of_ue(u, status);
        *message = make_msg(comm, u, "MPI_Improbe", &rc);
    }
    return rc;
}
