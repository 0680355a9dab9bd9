/* Attribute copy and delete callbacks are called the right number of times,
 * with the right arguments, at Comm_dup, Comm_free, Comm_delete_attr,
 * Comm_set_attr (replacing a value), Type_dup, Type_free and MPI_Finalize
 * (MPI_COMM_SELF's attributes first, then MPI_COMM_WORLD's); a keyval freed
 * while attributes use it keeps working for them; the predefined callbacks
 * (MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN, ...) behave as the standard says. */
#include "kt.h"

#define MAXLOG 64
static struct ev { char what; int keyval; long value; } evlog[MAXLOG];
static int nlog;
static int extra_a = 11, extra_b = 22;

static void logev(char what, int keyval, void *value)
{
    if (nlog < MAXLOG) evlog[nlog++] = (struct ev){ what, keyval, (long)(intptr_t)value };
}

/* copy: new value = old value + 100, extra_state must be &extra_a */
static int copy_plus(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm;
    if (extra != &extra_a) KT_FAIL("copy_plus: wrong extra_state");
    logev('c', keyval, in);
    *(void **)out = (void *)((intptr_t)in + 100);
    *flag = 1;
    return MPI_SUCCESS;
}

static int del_count(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    if (extra != &extra_a && extra != &extra_b) KT_FAIL("del_count: wrong extra_state");
    logev('d', keyval, value);
    return MPI_SUCCESS;
}

/* copy callback that declines to copy */
static int copy_no(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm; (void)extra; (void)out;
    logev('n', keyval, in);
    *flag = 0;
    return MPI_SUCCESS;
}

static int type_copy(MPI_Datatype t, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)t; (void)extra;
    logev('C', keyval, in);
    *(void **)out = (void *)((intptr_t)in * 2);
    *flag = 1;
    return MPI_SUCCESS;
}

static int type_del(MPI_Datatype t, int keyval, void *value, void *extra)
{
    (void)t; (void)extra;
    logev('D', keyval, value);
    return MPI_SUCCESS;
}

static MPI_Comm del_comm_seen[8];
static int n_del_comm_seen;
static int final_del(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)keyval; (void)extra;
    if (n_del_comm_seen < 8) del_comm_seen[n_del_comm_seen++] = comm;
    logev('f', keyval, value);
    return MPI_SUCCESS;
}

static int count(char what, int keyval, long value)
{
    int n = 0;
    for (int i = 0; i < nlog; i++)
        if (evlog[i].what == what && evlog[i].keyval == keyval && evlog[i].value == value) n++;
    return n;
}

static void get(MPI_Comm c, int k, int want_flag, long want)
{
    void *v = NULL;
    int flag = -1;
    KT_MPI(MPI_Comm_get_attr(c, k, &v, &flag));
    KT_EQ_INT(flag, want_flag);
    if (want_flag) KT_EQ_INT((long)(intptr_t)v, want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    int ka, kb, kdup, knull, k1;
    KT_MPI(MPI_Comm_create_keyval(copy_plus, del_count, &ka, &extra_a));
    KT_MPI(MPI_Comm_create_keyval(copy_no, del_count, &kb, &extra_b));
    KT_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kdup, NULL));
    KT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &knull, NULL));
    KT_MPI(MPI_Keyval_create(MPI_DUP_FN, del_count, &k1, &extra_b));   /* MPI-1 names */
    KT_CHECK(ka != kb && ka != kdup && kb != kdup && kdup != knull && k1 != ka, "keyvals must differ");
    KT_CHECK(ka != MPI_KEYVAL_INVALID, "keyval is MPI_KEYVAL_INVALID");

    MPI_Comm c1, c2;
    KT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c1));
    get(c1, ka, 0, 0);
    KT_MPI(MPI_Comm_set_attr(c1, ka, (void *)5));
    KT_MPI(MPI_Comm_set_attr(c1, kb, (void *)6));
    KT_MPI(MPI_Comm_set_attr(c1, kdup, (void *)7));
    KT_MPI(MPI_Comm_set_attr(c1, knull, (void *)8));
    KT_MPI(MPI_Attr_put(c1, k1, (void *)9));
    get(c1, ka, 1, 5);
    get(c1, kb, 1, 6);
    {
        void *v; int flag;
        KT_MPI(MPI_Attr_get(c1, k1, &v, &flag));
        KT_CHECK(flag && v == (void *)9, "MPI_Attr_get");
    }

    /* replacing a value calls the delete callback for the old one */
    KT_MPI(MPI_Comm_set_attr(c1, ka, (void *)15));
    KT_EQ_INT(count('d', ka, 5), 1);
    get(c1, ka, 1, 15);

    /* dup: copy_plus copies (15 -> 115), copy_no declines, DUP_FN copies, NULL_COPY_FN does not */
    KT_MPI(MPI_Comm_dup(c1, &c2));
    KT_EQ_INT(count('c', ka, 15), 1);
    KT_EQ_INT(count('n', kb, 6), 1);
    get(c2, ka, 1, 115);
    get(c2, kb, 0, 0);
    get(c2, kdup, 1, 7);
    get(c2, knull, 0, 0);
    get(c2, k1, 1, 9);
    get(c1, ka, 1, 15);                 /* the original is unchanged */

    /* delete_attr calls the delete callback once, and the value is gone */
    KT_MPI(MPI_Comm_delete_attr(c1, kb));
    KT_EQ_INT(count('d', kb, 6), 1);
    get(c1, kb, 0, 0);
    KT_MPI(MPI_Attr_delete(c2, k1));
    KT_EQ_INT(count('d', k1, 9), 1);

    /* keyval freed while attributes use it: they keep working (copy and delete) */
    int ka_saved = ka;
    KT_MPI(MPI_Comm_free_keyval(&ka));
    KT_EQ_INT(ka, MPI_KEYVAL_INVALID);
    MPI_Comm c3;
    KT_MPI(MPI_Comm_dup(c2, &c3));            /* copies c2's ka (115 -> 215) */
    KT_EQ_INT(count('c', ka_saved, 115), 1);
    get(c3, ka_saved, 1, 215);

    /* free: delete callbacks for each attribute with a delete function, once */
    KT_MPI(MPI_Comm_free(&c1));
    KT_EQ_INT(count('d', ka_saved, 15), 1);
    KT_EQ_INT(count('d', k1, 9), 2);         /* c1's k1 value (c2's was deleted above) */
    KT_MPI(MPI_Comm_free(&c2));
    KT_EQ_INT(count('d', ka_saved, 115), 1);
    KT_MPI(MPI_Comm_free(&c3));
    KT_EQ_INT(count('d', ka_saved, 215), 1);
    KT_EQ_INT(count('d', kb, 6), 1);          /* not called again */
    int ndel = 0;
    for (int i = 0; i < nlog; i++) ndel += evlog[i].what == 'd';
    KT_EQ_INT(ndel, 7);                        /* values 5 (replaced), 6, 9 (c2), 15, 9 (c1), 115, 215 */

    KT_MPI(MPI_Comm_free_keyval(&kb));
    KT_MPI(MPI_Comm_free_keyval(&kdup));
    KT_MPI(MPI_Comm_free_keyval(&knull));
    KT_MPI(MPI_Keyval_free(&k1));

    /* datatypes: Type_dup copies, Type_free deletes */
    int kt;
    MPI_Datatype t1, t2;
    KT_MPI(MPI_Type_create_keyval(type_copy, type_del, &kt, NULL));
    KT_MPI(MPI_Type_contiguous(2, MPI_INT, &t1));
    KT_MPI(MPI_Type_commit(&t1));
    KT_MPI(MPI_Type_set_attr(t1, kt, (void *)21));
    KT_MPI(MPI_Type_dup(t1, &t2));
    KT_EQ_INT(count('C', kt, 21), 1);
    {
        void *v = NULL; int flag = 0;
        KT_MPI(MPI_Type_get_attr(t2, kt, &v, &flag));
        KT_CHECK(flag && v == (void *)42, "Type_dup copied value: flag %d value %p", flag, v);
        KT_MPI(MPI_Type_get_attr(t1, kt, &v, &flag));
        KT_CHECK(flag && v == (void *)21, "original type's value");
    }
    KT_MPI(MPI_Type_free(&t1));
    KT_EQ_INT(count('D', kt, 21), 1);
    KT_MPI(MPI_Type_delete_attr(t2, kt));
    KT_EQ_INT(count('D', kt, 42), 1);
    KT_MPI(MPI_Type_free(&t2));
    KT_EQ_INT(count('D', kt, 42), 1);
    /* attributes on a predefined datatype */
    KT_MPI(MPI_Type_set_attr(MPI_DOUBLE, kt, (void *)3));
    KT_MPI(MPI_Type_delete_attr(MPI_DOUBLE, kt));
    KT_EQ_INT(count('D', kt, 3), 1);
    KT_MPI(MPI_Type_free_keyval(&kt));

    /* MPI_Finalize deletes MPI_COMM_SELF's attributes, then MPI_COMM_WORLD's */
    int kf;
    KT_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, final_del, &kf, NULL));
    KT_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, kf, (void *)1001));
    KT_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, kf, (void *)1002));
    KT_MPI(MPI_Comm_free_keyval(&kf));
    n_del_comm_seen = 0;
    MPI_Finalize();
    KT_EQ_INT(n_del_comm_seen, 2);
    KT_CHECK(del_comm_seen[0] == MPI_COMM_SELF, "MPI_COMM_SELF's attributes are deleted first");
    KT_CHECK(del_comm_seen[1] == MPI_COMM_WORLD, "then MPI_COMM_WORLD's");
    for (int i = 0; i < nlog; i++)
        if (evlog[i].what == 'f') {
            KT_EQ_INT(evlog[i].value, 1002);
            KT_EQ_INT(evlog[i + 1].value, 1001);
            break;
        }
    return 0;
}
