/* MPI_Info: set/get round trips, order of keys, replacement, delete, dup
 * independence, Info_get_string / Info_get / Info_get_valuelen truncation
 * rules, errors (MPI_ERR_INFO_KEY, _VALUE, _NOKEY, MPI_ERR_INFO, MPI_ERR_ARG),
 * MPI_INFO_ENV and MPI_Info_create_env. */
#include "kt.h"
#include <unistd.h>

static void expect(MPI_Info info, const char *key, const char *want)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = -1, buflen = sizeof v;
    KT_MPI(MPI_Info_get_string(info, key, &buflen, v, &flag));
    if (!want) {
        KT_EQ_INT(flag, 0);
        return;
    }
    KT_CHECK(flag == 1, "key %s missing", key);
    KT_CHECK(!strcmp(v, want), "key %s = '%s', expected '%s'", key, v, want);
    KT_EQ_INT(buflen, (int)strlen(want) + 1);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    MPI_Info info, dup;
    int n = -1;
    KT_MPI(MPI_Info_create(&info));
    KT_MPI(MPI_Info_get_nkeys(info, &n));
    KT_EQ_INT(n, 0);
    KT_MPI(MPI_Info_set(info, "zeta", "1"));
    KT_MPI(MPI_Info_set(info, "alpha", "two"));
    KT_MPI(MPI_Info_set(info, "mid", "a value with spaces"));
    KT_MPI(MPI_Info_set(info, "alpha", "TWO"));            /* replaces in place */
    KT_MPI(MPI_Info_get_nkeys(info, &n));
    KT_EQ_INT(n, 3);
    const char *order[] = { "zeta", "alpha", "mid" };
    for (int i = 0; i < 3; i++) {
        char key[MPI_MAX_INFO_KEY + 1];
        KT_MPI(MPI_Info_get_nthkey(info, i, key));
        KT_CHECK(!strcmp(key, order[i]), "key %d is '%s', expected '%s'", i, key, order[i]);
    }
    expect(info, "alpha", "TWO");
    expect(info, "mid", "a value with spaces");
    expect(info, "nope", NULL);
    expect(info, "Alpha", NULL);                            /* keys are case sensitive */

    /* Info_get_string: buflen 0 asks for the length; a short buffer is truncated, NUL-terminated */
    {
        char v[8];
        int flag = 0, buflen = 0;
        KT_MPI(MPI_Info_get_string(info, "mid", &buflen, NULL, &flag));
        KT_CHECK(flag && buflen == (int)strlen("a value with spaces") + 1, "buflen %d", buflen);
        buflen = 6;
        memset(v, '#', sizeof v);
        KT_MPI(MPI_Info_get_string(info, "mid", &buflen, v, &flag));
        KT_CHECK(!strcmp(v, "a val"), "truncated '%s'", v);
        KT_EQ_INT(buflen, (int)strlen("a value with spaces") + 1);
        KT_EQ_INT(v[6], '#');
        /* deprecated Info_get: valuelen characters plus NUL */
        memset(v, '#', sizeof v);
        KT_MPI(MPI_Info_get(info, "mid", 3, v, &flag));
        KT_CHECK(flag && !strcmp(v, "a v"), "Info_get '%s'", v);
        KT_EQ_INT(v[4], '#');
        KT_MPI(MPI_Info_get(info, "nope", 3, v, &flag));
        KT_EQ_INT(flag, 0);
        int len = -1;
        KT_MPI(MPI_Info_get_valuelen(info, "alpha", &len, &flag));
        KT_CHECK(flag && len == 3, "valuelen %d", len);
        KT_MPI(MPI_Info_get_valuelen(info, "nope", &len, &flag));
        KT_EQ_INT(flag, 0);
    }

    /* dup is a deep copy */
    KT_MPI(MPI_Info_dup(info, &dup));
    KT_MPI(MPI_Info_set(dup, "alpha", "changed"));
    KT_MPI(MPI_Info_delete(dup, "zeta"));
    expect(info, "alpha", "TWO");
    expect(info, "zeta", "1");
    expect(dup, "alpha", "changed");
    expect(dup, "zeta", NULL);
    KT_MPI(MPI_Info_get_nkeys(dup, &n));
    KT_EQ_INT(n, 2);
    {
        char key[MPI_MAX_INFO_KEY + 1];
        KT_MPI(MPI_Info_get_nthkey(dup, 0, key));
        KT_CHECK(!strcmp(key, "alpha"), "after delete, first key '%s'", key);
    }

    /* errors */
    char longkey[MPI_MAX_INFO_KEY + 2], longval[MPI_MAX_INFO_VAL + 2], v[16], key[MPI_MAX_INFO_KEY + 1];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;                        /* MPI_MAX_INFO_KEY + 1 characters */
    memset(longval, 'v', sizeof longval - 1);
    longval[sizeof longval - 1] = 0;
    int flag;
    KT_ERRCLASS(MPI_Info_set(info, longkey, "x"), MPI_ERR_INFO_KEY);
    KT_ERRCLASS(MPI_Info_set(info, "", "x"), MPI_ERR_INFO_KEY);
    KT_ERRCLASS(MPI_Info_set(info, "k", longval), MPI_ERR_INFO_VALUE);
    KT_ERRCLASS(MPI_Info_get(info, longkey, 4, v, &flag), MPI_ERR_INFO_KEY);
    KT_ERRCLASS(MPI_Info_delete(info, "nope"), MPI_ERR_INFO_NOKEY);
    KT_ERRCLASS(MPI_Info_get_nthkey(info, 3, key), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Info_get_nthkey(info, -1, key), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Info_get(info, "zeta", -1, v, &flag), MPI_ERR_ARG);
    KT_ERRCLASS(MPI_Info_set(MPI_INFO_NULL, "a", "b"), MPI_ERR_INFO);
    KT_ERRCLASS(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), MPI_ERR_INFO);
    MPI_Info null = MPI_INFO_NULL;
    KT_ERRCLASS(MPI_Info_free(&null), MPI_ERR_INFO);
    {   /* a key of exactly MPI_MAX_INFO_KEY characters is fine */
        longkey[MPI_MAX_INFO_KEY] = 0;
        KT_MPI(MPI_Info_set(info, longkey, "edge"));
        expect(info, longkey, "edge");
        longval[MPI_MAX_INFO_VAL] = 0;
        KT_MPI(MPI_Info_set(info, "bigvalue", longval));
        expect(info, "bigvalue", longval);
    }

    KT_MPI(MPI_Info_free(&info));
    KT_CHECK(info == MPI_INFO_NULL, "Info_free sets MPI_INFO_NULL");
    KT_MPI(MPI_Info_free(&dup));
    KT_ERRCLASS(MPI_Info_get_nkeys(dup, &n), MPI_ERR_INFO);

    /* MPI_INFO_ENV */
    {
        char val[MPI_MAX_INFO_VAL + 1], want[64], cwd[1024];
        int buflen = sizeof val;
        KT_MPI(MPI_Info_get_string(MPI_INFO_ENV, "command", &buflen, val, &flag));
        KT_CHECK(flag && strstr(val, "info_basic"), "command '%s'", flag ? val : "(none)");
        buflen = sizeof val;
        KT_MPI(MPI_Info_get_string(MPI_INFO_ENV, "argv", &buflen, val, &flag));
        KT_CHECK(flag && !strcmp(val, "one two"), "argv '%s'", flag ? val : "(none)");
        snprintf(want, sizeof want, "%d", size);
        expect(MPI_INFO_ENV, "maxprocs", want);
        KT_CHECK(getcwd(cwd, sizeof cwd), "getcwd");
        expect(MPI_INFO_ENV, "wdir", cwd);
        expect(MPI_INFO_ENV, "thread_level", "MPI_THREAD_SINGLE");
        char host[MPI_MAX_PROCESSOR_NAME];
        int hl;
        KT_MPI(MPI_Get_processor_name(host, &hl));
        expect(MPI_INFO_ENV, "host", host);
        buflen = sizeof val;
        KT_MPI(MPI_Info_get_string(MPI_INFO_ENV, "arch", &buflen, val, &flag));
        KT_CHECK(flag && val[0], "arch");
        /* a dup of it is an ordinary info object */
        KT_MPI(MPI_Info_dup(MPI_INFO_ENV, &dup));
        expect(dup, "maxprocs", want);
        KT_MPI(MPI_Info_free(&dup));
        MPI_Info env = MPI_INFO_ENV;
        KT_ERRCLASS(MPI_Info_free(&env), MPI_ERR_INFO);
    }

    /* MPI_Info_create_env from given arguments */
    {
        char *av[] = { "./prog", "-x", "7", NULL };
        MPI_Info e;
        KT_MPI(MPI_Info_create_env(3, (void *)av, &e));
        expect(e, "command", "./prog");
        expect(e, "argv", "-x 7");
        KT_MPI(MPI_Info_free(&e));
    }
    MPI_Finalize();
    return 0;
}
