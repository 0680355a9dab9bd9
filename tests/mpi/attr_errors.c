/* Attribute errors: a copy callback that fails makes MPI_Comm_dup fail with
 * its code (and no communicator is made); a delete callback that fails makes
 * MPI_Comm_delete_attr / MPI_Comm_free / MPI_Type_free fail with its code;
 * invalid, freed, predefined and wrong-kind keyvals give MPI_ERR_KEYVAL. */
#include "kt.h"

static int fail_copy = 0, fail_del = 0, my_class, my_code;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)keyval; (void)extra;
    if (fail_copy) return my_code;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int del_fn(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm; (void)keyval; (void)value; (void)extra;
    return fail_del ? my_code : MPI_SUCCESS;
}

static int tdel_fn(MPI_Datatype t, int keyval, void *value, void *extra)
{
    (void)t; (void)keyval; (void)value; (void)extra;
    return fail_del ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static void expect_code(int rc, int code)
{
    KT_CHECK(rc != MPI_SUCCESS, "call succeeded, expected code %d", code);
    int c1 = -1, c2 = -2;
    KT_MPI(MPI_Error_class(rc, &c1));
    KT_MPI(MPI_Error_class(code, &c2));
    KT_EQ_INT(c1, c2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Add_error_class(&my_class));
    KT_MPI(MPI_Add_error_code(my_class, &my_code));

    int k;
    MPI_Comm c, d = MPI_COMM_NULL;
    KT_MPI(MPI_Comm_create_keyval(copy_fn, del_fn, &k, NULL));
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    KT_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    KT_MPI(MPI_Comm_set_attr(c, k, (void *)1));

    /* a failing copy callback: the dup fails with its code (same on all ranks here) */
    fail_copy = 1;
    int rc = MPI_Comm_dup(c, &d);
    expect_code(rc, my_code);
    KT_CHECK(d == MPI_COMM_NULL, "no new communicator after a failed copy");
    fail_copy = 0;

    /* a failing delete callback: delete_attr and free fail; the attribute stays */
    fail_del = 1;
    expect_code(MPI_Comm_delete_attr(c, k), my_code);
    void *v = NULL;
    int flag = 0;
    KT_MPI(MPI_Comm_get_attr(c, k, &v, &flag));
    KT_CHECK(flag && v == (void *)1, "attribute kept after a failed delete");
    expect_code(MPI_Comm_set_attr(c, k, (void *)2), my_code);   /* replacing deletes the old value */
    MPI_Comm keep = c;
    expect_code(MPI_Comm_free(&c), my_code);
    KT_CHECK(c == keep, "a failed MPI_Comm_free leaves the handle");
    fail_del = 0;
    KT_MPI(MPI_Comm_free(&c));
    KT_CHECK(c == MPI_COMM_NULL, "MPI_Comm_free sets MPI_COMM_NULL");

    /* keyval errors */
    KT_ERRCLASS(MPI_Comm_set_attr(MPI_COMM_WORLD, 123456, (void *)1), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_delete_attr(MPI_COMM_WORLD, k), MPI_ERR_KEYVAL);   /* no value set */
    KT_ERRCLASS(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, (void *)1), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB), MPI_ERR_KEYVAL);
    int pk = MPI_TAG_UB;
    KT_ERRCLASS(MPI_Comm_free_keyval(&pk), MPI_ERR_KEYVAL);
    KT_EQ_INT(pk, MPI_TAG_UB);
    /* a communicator keyval is not a datatype keyval */
    KT_ERRCLASS(MPI_Type_set_attr(MPI_INT, k, (void *)1), MPI_ERR_KEYVAL);
    int saved = k;
    KT_MPI(MPI_Comm_free_keyval(&k));
    KT_EQ_INT(k, MPI_KEYVAL_INVALID);
    KT_ERRCLASS(MPI_Comm_set_attr(MPI_COMM_WORLD, saved, (void *)1), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_free_keyval(&saved), MPI_ERR_KEYVAL);
    KT_ERRCLASS(MPI_Comm_set_attr(MPI_COMM_NULL, saved, (void *)1), MPI_ERR_COMM);

    /* a failing datatype delete callback makes MPI_Type_free fail */
    int tk;
    MPI_Datatype t;
    KT_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, tdel_fn, &tk, NULL));
    KT_MPI(MPI_Type_contiguous(3, MPI_INT, &t));
    KT_MPI(MPI_Type_set_attr(t, tk, (void *)4));
    fail_del = 1;
    KT_ERRCLASS(MPI_Type_delete_attr(t, tk), MPI_ERR_OTHER);
    fail_del = 0;
    KT_MPI(MPI_Type_free(&t));
    KT_MPI(MPI_Type_free_keyval(&tk));
    KT_ERRCLASS(MPI_Type_get_attr(MPI_INT, tk, &v, &flag), MPI_ERR_KEYVAL);

    MPI_Finalize();
    return 0;
}
