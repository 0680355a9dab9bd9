/* Buffers for buffered-mode sends (MPI 4.1 sec. 3.6): the MPI process's
 * (MPI_Buffer_attach(_c), MPI_Buffer_detach(_c), MPI_Buffer_flush,
 * MPI_Buffer_iflush), a communicator's (MPI_Comm_attach_buffer(_c),
 * MPI_Comm_detach_buffer(_c), MPI_Comm_flush_buffer,
 * MPI_Comm_iflush_buffer) and a session's (MPI_Session_*_buffer).  The
 * buffers and the space of buffered messages are kept by the request layer
 * (request/bsend.c); MPI_Buffer_attach(_c) is generated as a call of
 * kumi_bsend_attach.
 *
 * Implicit detaches: MPI_Comm_free (mpi/comm_create.c) and
 * MPI_Session_finalize (mpi/session.c) detach the buffer of the object
 * they end, and MPI_Finalize those of the process, MPI_COMM_WORLD and
 * MPI_COMM_SELF (kumi_buffers_finalize), each waiting until its messages
 * have gone out. */
#include "mpi/mpi_front.h"
#include <limits.h>
#include <stdint.h>
#include <stdio.h>

/* ------------------------------------------------------------ process */
int kumi_mpi_buffer_detach(void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = kumi_bsend_detach("MPI_Buffer_detach", buffer_addr, &n, INT_MAX);
    if (!rc && size) *size = (int)n;
    return rc;
}

int kumi_mpi_buffer_detach_c(void *buffer_addr, MPI_Count *size)
{
    return kumi_bsend_detach("MPI_Buffer_detach_c", buffer_addr, size, INT64_MAX);
}

int kumi_mpi_buffer_flush(void)
{
    return kumi_bbuf_flush(kumi_bbuf_process());
}

int kumi_mpi_buffer_iflush(MPI_Request *request)
{
    int rc = kumi_bbuf_iflush(kumi_bbuf_process(), NULL, "MPI_Buffer_iflush", request);
    return rc ? kumi_err_handle(NULL, rc) : MPI_SUCCESS;
}

/* ------------------------------------------------------- communicator */
/* Errors are returned: the binding hands them to comm's handler. */
static const char *comm_what(const struct kumi_comm *c, char *s, size_t n)
{
    snprintf(s, n, "communicator %s", c->name[0] ? c->name : "(unnamed)");
    return s;
}

static int comm_attach(struct kumi_comm *comm, void *buffer, MPI_Count size, const char *fn)
{
    char w[MPI_MAX_OBJECT_NAME + 16];
    return kumi_bbuf_attach(&comm->bbuf, fn, comm_what(comm, w, sizeof w), buffer, size);
}

int kumi_mpi_comm_attach_buffer(struct kumi_comm *comm, void *buffer, int size)
{
    return comm_attach(comm, buffer, size, "MPI_Comm_attach_buffer");
}

int kumi_mpi_comm_attach_buffer_c(struct kumi_comm *comm, void *buffer, MPI_Count size)
{
    return comm_attach(comm, buffer, size, "MPI_Comm_attach_buffer_c");
}

int kumi_mpi_comm_detach_buffer(struct kumi_comm *comm, void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = kumi_bbuf_detach(&comm->bbuf, "MPI_Comm_detach_buffer", buffer_addr, &n, INT_MAX);
    if (!rc && size) *size = (int)n;
    return rc;
}

int kumi_mpi_comm_detach_buffer_c(struct kumi_comm *comm, void *buffer_addr, MPI_Count *size)
{
    return kumi_bbuf_detach(&comm->bbuf, "MPI_Comm_detach_buffer_c", buffer_addr, size, INT64_MAX);
}

int kumi_mpi_comm_flush_buffer(struct kumi_comm *comm)
{
    return kumi_bbuf_flush(&comm->bbuf);
}

int kumi_mpi_comm_iflush_buffer(struct kumi_comm *comm, MPI_Request *request)
{
    return kumi_bbuf_iflush(&comm->bbuf, comm, "MPI_Comm_iflush_buffer", request);
}

/* MPI_Comm_free: the communicator's buffer is detached (its messages go out first). */
int kumi_buffer_comm_free(struct kumi_comm *comm)
{
    return kumi_bbuf_detach(&comm->bbuf, "MPI_Comm_free", NULL, NULL, INT64_MAX);
}

/* ------------------------------------------------------------ session */
/* The implementations handle their errors: the session's handler. */
static int session_fail(struct kumi_session *s, int code)
{
    return kumi_errh_invoke(s->errh, KUMI_ERRH_OBJ_SESSION, s->handle, kumi_err_in(code, kumi_call));
}

static struct kumi_session *session_of(MPI_Session h, const char *fn, int *rc)
{
    struct kumi_session *s = kumi_session_get(h);
    if (!s)
        *rc = kumi_err_handle(NULL, kumi_error(MPI_ERR_SESSION, "%s: argument session is %s", fn,
                                               h == MPI_SESSION_NULL ? "MPI_SESSION_NULL" : "not a valid session"));
    return s;
}

static int session_attach(MPI_Session session, void *buffer, MPI_Count size, const char *fn)
{
    int rc = MPI_SUCCESS;
    struct kumi_session *s = session_of(session, fn, &rc);
    if (!s) return rc;
    rc = kumi_bbuf_attach(&s->bbuf, fn, "the session", buffer, size);
    return rc ? session_fail(s, rc) : MPI_SUCCESS;
}

int kumi_mpi_session_attach_buffer(MPI_Session session, void *buffer, int size)
{
    return session_attach(session, buffer, size, "MPI_Session_attach_buffer");
}

int kumi_mpi_session_attach_buffer_c(MPI_Session session, void *buffer, MPI_Count size)
{
    return session_attach(session, buffer, size, "MPI_Session_attach_buffer_c");
}

static int session_detach(MPI_Session session, void *buffer_addr, MPI_Count *size, MPI_Count max, const char *fn)
{
    int rc = MPI_SUCCESS;
    struct kumi_session *s = session_of(session, fn, &rc);
    if (!s) return rc;
    rc = kumi_bbuf_detach(&s->bbuf, fn, buffer_addr, size, max);
    return rc ? session_fail(s, rc) : MPI_SUCCESS;
}

int kumi_mpi_session_detach_buffer(MPI_Session session, void *buffer_addr, int *size)
{
    MPI_Count n = 0;
    int rc = session_detach(session, buffer_addr, &n, INT_MAX, "MPI_Session_detach_buffer");
    if (!rc && size) *size = (int)n;
    return rc;
}

int kumi_mpi_session_detach_buffer_c(MPI_Session session, void *buffer_addr, MPI_Count *size)
{
    return session_detach(session, buffer_addr, size, INT64_MAX, "MPI_Session_detach_buffer_c");
}

int kumi_mpi_session_flush_buffer(MPI_Session session)
{
    int rc = MPI_SUCCESS;
    struct kumi_session *s = session_of(session, "MPI_Session_flush_buffer", &rc);
    if (!s) return rc;
    return kumi_bbuf_flush(&s->bbuf);
}

int kumi_mpi_session_iflush_buffer(MPI_Session session, MPI_Request *request)
{
    static const char fn[] = "MPI_Session_iflush_buffer";
    int rc = MPI_SUCCESS;
    struct kumi_session *s = session_of(session, fn, &rc);
    if (!s) return rc;
    rc = kumi_bbuf_iflush(&s->bbuf, NULL, fn, request);
    return rc ? session_fail(s, rc) : MPI_SUCCESS;
}

/* ------------------------------------------------------------ finalize */
/* MPI_Finalize: the process's buffer and those of MPI_COMM_WORLD and
 * MPI_COMM_SELF are detached, their messages delivered first. */
int kumi_buffers_finalize(void)
{
    int rc = kumi_bbuf_detach(&KUMI_COMM_WORLD->bbuf, "MPI_Finalize", NULL, NULL, INT64_MAX);
    int rc2 = kumi_bbuf_detach(&KUMI_COMM_SELF->bbuf, "MPI_Finalize", NULL, NULL, INT64_MAX);
    int rc3 = kumi_bbuf_detach(kumi_bbuf_process(), "MPI_Finalize", NULL, NULL, INT64_MAX);
    return rc ? rc : rc2 ? rc2 : rc3;
}
