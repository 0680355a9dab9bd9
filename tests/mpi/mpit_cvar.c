/* MPI_T control variables and categories (MPI 4.1 sec. 15.3.6, 15.3.8):
 * Kumi's parameters are the control variables, under the names kumi_info
 * lists; a read-only one refuses writes, a run-time one
 * (kumi_base_progress_sleep_ms) is written and read back, and the library
 * keeps working with the new value; the categories are one per framework
 * and one per component, and hold the variables they should; bad indices,
 * names and handles give the MPI_T error classes.
 * With an argument FILE: writes the names of all control variables,
 * performance variables and categories to FILE ("cvar NAME", "pvar NAME",
 * "category NAME"), for
 * tests/scripts/mpit_names.sh to compare with kumi_info. */
#include "kt.h"

static int cvar_index(const char *name)
{
    int i = -1;
    KT_MPI(MPI_T_cvar_get_index(name, &i));
    return i;
}

static void check_cvar(const char *name, MPI_Datatype want)
{
    int i = cvar_index(name), nlen = 256, dlen = 1024, verb, bind, scope;
    char n[256], d[1024];
    MPI_Datatype dt;
    MPI_T_enum en;
    KT_MPI(MPI_T_cvar_get_info(i, n, &nlen, &verb, &dt, &en, d, &dlen, &bind, &scope));
    KT_CHECK(!strcmp(n, name), "cvar %d is %s, expected %s", i, n, name);
    KT_EQ_INT(nlen, (int)strlen(name) + 1);
    KT_CHECK(dt == want, "datatype of %s", name);
    KT_EQ_INT(bind, MPI_T_BIND_NO_OBJECT);
    KT_CHECK(dlen > 1 && strlen(d) > 0, "description of %s is empty", name);
}

int main(int argc, char **argv)
{
    int provided, rc;
    KT_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    KT_MPI(MPI_Init(&argc, &argv));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    int n = 0;
    KT_MPI(MPI_T_cvar_get_num(&n));
    KT_CHECK(n > 20, "only %d control variables", n);
    if (argc > 1 && rank == 0) {
        FILE *f = fopen(argv[1], "w");
        KT_CHECK(f != NULL, "cannot write %s", argv[1]);
        for (int i = 0; i < n; i++) {
            char name[256];
            int len = sizeof name;
            KT_MPI(MPI_T_cvar_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
            fprintf(f, "cvar %s\n", name);
        }
        int nc, np;
        KT_MPI(MPI_T_pvar_get_num(&np));
        for (int i = 0; i < np; i++) {
            char name[256];
            int len = sizeof name;
            KT_MPI(MPI_T_pvar_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL));
            fprintf(f, "pvar %s\n", name);
        }
        KT_MPI(MPI_T_category_get_num(&nc));
        for (int i = 0; i < nc; i++) {
            char name[256];
            int len = sizeof name;
            KT_MPI(MPI_T_category_get_info(i, name, &len, NULL, NULL, NULL, NULL, NULL));
            fprintf(f, "category %s\n", name);
        }
        fclose(f);
    }

    /* known parameters, their types */
    check_cvar("p2p_tcp_if_include", MPI_CHAR);
    check_cvar("p2p_tcp_eager_limit", MPI_UNSIGNED_LONG);
    check_cvar("kumi_base_verbose", MPI_LONG_LONG);
    check_cvar("kumi_base_rma_direct", MPI_INT);
    check_cvar("p2p_tcp_connect_timeout", MPI_DOUBLE);

    /* a string: count is the buffer it needs; the value as set by the environment */
    MPI_T_cvar_handle h;
    int count = 0;
    KT_MPI(MPI_T_cvar_handle_alloc(cvar_index("p2p_tcp_if_include"), NULL, &h, &count));
    KT_CHECK(count >= 256, "string count %d", count);
    char *s = calloc(1, (size_t)count);
    KT_MPI(MPI_T_cvar_read(h, s));
    const char *env = getenv("KUMI_P2P_TCP_IF_INCLUDE");
    KT_CHECK(!strcmp(s, env ? env : ""), "p2p_tcp_if_include reads '%s', environment '%s'", s, env ? env : "");
    /* read-only: MPI_T_ERR_CVAR_SET_NEVER, value unchanged */
    rc = MPI_T_cvar_write(h, "lo");
    KT_EQ_INT(rc, MPI_T_ERR_CVAR_SET_NEVER);
    KT_MPI(MPI_T_cvar_handle_free(&h));
    KT_CHECK(h == MPI_T_CVAR_HANDLE_NULL, "handle not reset");
    free(s);

    /* a bool with its enumeration */
    int i = cvar_index("kumi_base_rma_direct"), num, len;
    MPI_T_enum en;
    KT_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, &en, NULL, NULL, NULL, NULL));
    KT_CHECK(en != MPI_T_ENUM_NULL, "bool without enumeration");
    char ename[64];
    len = sizeof ename;
    KT_MPI(MPI_T_enum_get_info(en, &num, ename, &len));
    KT_EQ_INT(num, 2);
    int val;
    len = sizeof ename;
    KT_MPI(MPI_T_enum_get_item(en, 1, &val, ename, &len));
    KT_CHECK(val == 1 && !strcmp(ename, "true"), "item 1 is %d %s", val, ename);
    KT_EQ_INT(MPI_T_enum_get_item(en, 2, &val, ename, &len), MPI_T_ERR_INVALID_ITEM);

    /* a run-time one: scope local, written and read back */
    int scope;
    i = cvar_index("kumi_base_progress_sleep_ms");
    KT_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope));
    KT_EQ_INT(scope, MPI_T_SCOPE_LOCAL);
    KT_MPI(MPI_T_cvar_get_info(cvar_index("p2p_tcp_eager_limit"), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               &scope));
    KT_EQ_INT(scope, MPI_T_SCOPE_READONLY);
    KT_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    KT_EQ_INT(count, 1);
    long long v = 0, w = 3 + rank;
    KT_MPI(MPI_T_cvar_read(h, &v));
    KT_EQ_INT(v, 20);
    KT_MPI(MPI_T_cvar_write(h, &w));
    v = 0;
    KT_MPI(MPI_T_cvar_read(h, &v));
    KT_EQ_INT(v, 3 + rank);
    /* the library sleeps with it: a blocking exchange still works */
    int token = rank, got = -1, size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    KT_MPI(MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % size, 0, &got, 1, MPI_INT, (rank + size - 1) % size, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    KT_EQ_INT(got, (rank + size - 1) % size);
    KT_MPI(MPI_T_cvar_handle_free(&h));

    /* categories: frameworks and components, members where they belong */
    int ncat, c, ncv, npv, nsub;
    KT_MPI(MPI_T_category_get_num(&ncat));
    KT_CHECK(ncat >= 8, "only %d categories", ncat);
    KT_MPI(MPI_T_category_get_index("p2p", &c));
    KT_MPI(MPI_T_category_get_info(c, NULL, NULL, NULL, NULL, &ncv, &npv, &nsub));
    KT_CHECK(nsub >= 2 && npv >= 4, "p2p: %d subcategories, %d pvars", nsub, npv);
    int *sub = malloc(sizeof(int) * (size_t)nsub), tcp = -1;
    KT_MPI(MPI_T_category_get_categories(c, nsub, sub));
    KT_MPI(MPI_T_category_get_index("p2p_tcp", &tcp));
    int found = 0;
    for (int k = 0; k < nsub; k++) found |= sub[k] == tcp;
    KT_CHECK(found, "p2p_tcp is not a subcategory of p2p");
    free(sub);
    KT_MPI(MPI_T_category_get_info(tcp, NULL, NULL, NULL, NULL, &ncv, &npv, &nsub));
    KT_CHECK(ncv >= 5 && npv == 2 && nsub == 0, "p2p_tcp: %d cvars, %d pvars, %d subcategories", ncv, npv, nsub);
    int *cv = malloc(sizeof(int) * (size_t)ncv);
    KT_MPI(MPI_T_category_get_cvars(tcp, ncv, cv));
    found = 0;
    for (int k = 0; k < ncv; k++) found |= cv[k] == cvar_index("p2p_tcp_if_include");
    KT_CHECK(found, "p2p_tcp_if_include is not in category p2p_tcp");
    free(cv);
    int ev;
    KT_MPI(MPI_T_category_get_num_events(c, &ev));
    KT_EQ_INT(ev, 1);
    int upd1, upd2;
    KT_MPI(MPI_T_category_changed(&upd1));
    KT_MPI(MPI_T_category_changed(&upd2));
    KT_EQ_INT(upd1, upd2);

    /* errors */
    KT_EQ_INT(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_cvar_handle_alloc(n, NULL, &h, &count), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_cvar_get_index("p2p_tcp_no_such_thing", &i), MPI_T_ERR_INVALID_NAME);
    KT_EQ_INT(MPI_T_cvar_read(MPI_T_CVAR_HANDLE_NULL, &v), MPI_T_ERR_INVALID_HANDLE);
    h = MPI_T_CVAR_HANDLE_NULL;
    KT_EQ_INT(MPI_T_cvar_handle_free(&h), MPI_T_ERR_INVALID_HANDLE);
    KT_EQ_INT(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_category_get_index("no_such_category", &c), MPI_T_ERR_INVALID_NAME);
    KT_EQ_INT(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &num, NULL, NULL), MPI_T_ERR_INVALID_HANDLE);
    KT_EQ_INT(MPI_T_pvar_get_index("p2p_unexpected_queue_length", MPI_T_PVAR_CLASS_COUNTER, &i),
              MPI_T_ERR_INVALID_NAME);
    KT_EQ_INT(MPI_T_source_get_info(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), MPI_T_ERR_INVALID_INDEX);
    KT_EQ_INT(MPI_T_event_get_index("no_such_event", &i), MPI_T_ERR_INVALID_NAME);
    /* the error classes have their strings */
    char es[MPI_MAX_ERROR_STRING];
    int eslen, cls;
    KT_MPI(MPI_Error_string(MPI_T_ERR_INVALID_HANDLE, es, &eslen));
    KT_CHECK(strstr(es, "MPI_T_ERR_INVALID_HANDLE") != NULL, "error string '%s'", es);
    KT_MPI(MPI_Error_class(MPI_T_ERR_INVALID_INDEX, &cls));
    KT_EQ_INT(cls, MPI_T_ERR_INVALID_INDEX);

    KT_MPI(MPI_Finalize());
    KT_MPI(MPI_T_finalize());
    KT_EQ_INT(MPI_T_cvar_get_num(&n), MPI_T_ERR_NOT_INITIALIZED);
    KT_EQ_INT(MPI_T_finalize(), MPI_T_ERR_NOT_INITIALIZED);
    if (rank == 0) printf("mpit_cvar: ok\n");
    return 0;
}
