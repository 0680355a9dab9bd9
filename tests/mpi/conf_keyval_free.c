/* conf_keyval_free: a keyval freed while attributes use it (issue 16 item 2;
 * MPI 4.1 sec. 7.7.2: "the actual free does not transpire until after all
 * references ... to the key have been freed", by MPI_*_DELETE_ATTR or by
 * freeing the objects).  For communicators, datatypes and windows: after
 * MPI_*_free_keyval (which sets the handle to MPI_KEYVAL_INVALID) the
 * attributes still read through a saved copy of the key, are copied by dup
 * (copy callback runs), can be deleted with the saved key (delete callback
 * runs), and their delete callbacks run when the objects are freed; once the
 * last attribute is gone, the key is invalid. */
#include "kt.h"

static int ncopy, ndelete;

static int copy_cb(void *o, int key, void *extra, void *in, void *out, int *flag)
{
    (void)o; (void)key; (void)extra;
    ncopy++;
    *(void **)out = (char *)in + 1;      /* the copy's value: one more */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_cb(void *o, int key, void *val, void *extra)
{
    (void)o; (void)key; (void)val; (void)extra;
    ndelete++;
    return MPI_SUCCESS;
}

static int comm_copy(MPI_Comm c, int k, void *e, void *i, void *o, int *f) { return copy_cb(&c, k, e, i, o, f); }
static int comm_del(MPI_Comm c, int k, void *v, void *e) { return delete_cb(&c, k, v, e); }
static int type_copy(MPI_Datatype t, int k, void *e, void *i, void *o, int *f) { return copy_cb(&t, k, e, i, o, f); }
static int type_del(MPI_Datatype t, int k, void *v, void *e) { return delete_cb(&t, k, v, e); }
static int win_del(MPI_Win w, int k, void *v, void *e) { return delete_cb(&w, k, v, e); }

static void expect_attr(const char *what, int rc, int flag, void *got, void *want)
{
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("%s: %s", what, s);
    }
    KT_CHECK(flag, "%s: no attribute", what);
    KT_CHECK(got == want, "%s: value %p, expected %p", what, got, want);
}

int main(int argc, char **argv)
{
    static char base[16];
    void *v;
    int flag, rc;
    KT_MPI(MPI_Init(&argc, &argv));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);

    /* ---- communicators */
    int key, saved;
    MPI_Comm a, b, c;
    KT_MPI(MPI_Comm_dup(MPI_COMM_SELF, &a));
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Comm_create_keyval(comm_copy, comm_del, &key, NULL));
    KT_MPI(MPI_Comm_set_attr(a, key, base));
    saved = key;
    KT_MPI(MPI_Comm_free_keyval(&key));
    KT_EQ_INT(key, MPI_KEYVAL_INVALID);
    rc = MPI_Comm_get_attr(a, saved, &v, &flag);
    expect_attr("comm: get after free_keyval", rc, flag, v, base);
    KT_MPI(MPI_Comm_dup(a, &b));                       /* copy callback */
    KT_EQ_INT(ncopy, 1);
    rc = MPI_Comm_get_attr(b, saved, &v, &flag);
    expect_attr("comm: the dup's copy", rc, flag, v, base + 1);
    KT_MPI(MPI_Comm_dup(b, &c));
    KT_EQ_INT(ncopy, 2);
    rc = MPI_Comm_delete_attr(a, saved);                /* the defect */
    if (rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int l = 0;
        MPI_Error_string(rc, s, &l);
        KT_FAIL("MPI_Comm_delete_attr with a freed keyval that still has attributes: %s", s);
    }
    KT_EQ_INT(ndelete, 1);
    KT_MPI(MPI_Comm_get_attr(a, saved, &v, &flag));
    KT_EQ_INT(flag, 0);
    KT_MPI(MPI_Comm_free(&b));                         /* delete callback */
    KT_EQ_INT(ndelete, 2);
    rc = MPI_Comm_get_attr(c, saved, &v, &flag);
    expect_attr("comm: the last attribute", rc, flag, v, base + 2);
    KT_MPI(MPI_Comm_free(&c));
    KT_EQ_INT(ndelete, 3);
    /* the last reference went: the key is gone */
    KT_ERRCLASS(MPI_Comm_get_attr(a, saved, &v, &flag), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_set_attr(a, saved, base), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_free_keyval(&saved), MPI_ERR_KEYVAL);
    KT_MPI(MPI_Comm_free(&a));

    /* a freed key with attributes left cannot be set anew or freed twice */
    KT_MPI(MPI_Comm_dup(MPI_COMM_SELF, &a));
    MPI_Comm_set_errhandler(a, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_del, &key, NULL));
    KT_MPI(MPI_Comm_set_attr(a, key, base));
    saved = key;
    KT_MPI(MPI_Comm_free_keyval(&key));
    KT_ERRCLASS(MPI_Comm_free_keyval(&saved), MPI_ERR_KEYVAL);
    ndelete = 0;
    KT_MPI(MPI_Comm_free(&a));
    KT_EQ_INT(ndelete, 1);

    /* ---- datatypes */
    MPI_Datatype t1, t2;
    ncopy = ndelete = 0;
    KT_MPI(MPI_Type_contiguous(2, MPI_INT, &t1));
    KT_MPI(MPI_Type_create_keyval(type_copy, type_del, &key, NULL));
    KT_MPI(MPI_Type_set_attr(t1, key, base));
    saved = key;
    KT_MPI(MPI_Type_free_keyval(&key));
    KT_EQ_INT(key, MPI_KEYVAL_INVALID);
    KT_MPI(MPI_Type_dup(t1, &t2));
    KT_EQ_INT(ncopy, 1);
    rc = MPI_Type_get_attr(t2, saved, &v, &flag);
    expect_attr("type: the dup's copy", rc, flag, v, base + 1);
    KT_MPI(MPI_Type_delete_attr(t1, saved));
    KT_EQ_INT(ndelete, 1);
    KT_MPI(MPI_Type_free(&t2));
    KT_EQ_INT(ndelete, 2);
    KT_ERRCLASS(MPI_Type_get_attr(t1, saved, &v, &flag), MPI_ERR_KEYVAL);
    KT_MPI(MPI_Type_free(&t1));

    /* ---- windows */
    MPI_Win w;
    ndelete = 0;
    KT_MPI(MPI_Win_create(NULL, 0, 1, MPI_INFO_NULL, MPI_COMM_SELF, &w));
    MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN);
    KT_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_del, &key, NULL));
    KT_MPI(MPI_Win_set_attr(w, key, base));
    saved = key;
    KT_MPI(MPI_Win_free_keyval(&key));
    KT_EQ_INT(key, MPI_KEYVAL_INVALID);
    rc = MPI_Win_get_attr(w, saved, &v, &flag);
    expect_attr("win: get after free_keyval", rc, flag, v, base);
    KT_MPI(MPI_Win_delete_attr(w, saved));
    KT_EQ_INT(ndelete, 1);
    KT_ERRCLASS(MPI_Win_get_attr(w, saved, &v, &flag), MPI_ERR_KEYVAL);
    KT_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_del, &key, NULL));
    KT_MPI(MPI_Win_set_attr(w, key, base));
    KT_MPI(MPI_Win_free_keyval(&key));
    KT_MPI(MPI_Win_free(&w));                            /* delete callback at free */
    KT_EQ_INT(ndelete, 2);

    KT_MPI(MPI_Finalize());
    return 0;
}
