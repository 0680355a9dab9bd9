/* kumi_info --mpit: what the MPI_T tools interface shows (issue 23 item 3),
 * through MPI_T itself, so that both show the same names: the performance
 * variables (name, class, binding, description) and the categories (their
 * parent and members).  The control variables are the parameters, which
 * kumi_info lists anyway under the same names. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "info_mpit.h"

static const char *class_name(int c)
{
    static const char *const n[] = { "?", "state", "level", "size", "percentage", "highwatermark",
                                      "lowwatermark", "counter", "aggregate", "timer", "generic" };
    return c >= 1 && c <= 10 ? n[c] : "?";
}

static const char *bind_name(int b)
{
    return b == MPI_T_BIND_NO_OBJECT ? "none" : b == MPI_T_BIND_MPI_COMM ? "communicator" : "object";
}

static void kv(const char *kind, const char *name, const char *key, const char *value)
{
    printf("%s:%s:%s:%s\n", kind, name, key, value);
}

int kumi_info_mpit(int parsable)
{
    int provided, n, nc;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS || MPI_T_pvar_get_num(&n) != MPI_SUCCESS ||
        MPI_T_category_get_num(&nc) != MPI_SUCCESS) {
        fprintf(stderr, "kumi_info: MPI_T does not initialize\n");
        return 1;
    }
    if (!parsable) printf("\nMPI_T performance variables (%d):\n", n);
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, cls, bind, ro, cont;
        if (MPI_T_pvar_get_info(i, name, &nl, NULL, &cls, NULL, NULL, desc, &dl, &bind, &ro, &cont, NULL))
            continue;
        if (parsable) {
            kv("pvar", name, "class", class_name(cls));
            kv("pvar", name, "bind", bind_name(bind));
            kv("pvar", name, "readonly", ro ? "yes" : "no");
            kv("pvar", name, "continuous", cont ? "yes" : "no");
            kv("pvar", name, "description", desc);
        } else {
            printf("%25s: pvar \"%s\" (%s%s%s)\n", class_name(cls), name,
                   bind == MPI_T_BIND_NO_OBJECT ? "" : "per ", bind == MPI_T_BIND_NO_OBJECT ? "per process" :
                   bind_name(bind), cont ? ", continuous" : ", while started");
            printf("%25s  %s\n", "", desc);
        }
    }
    if (!parsable) printf("\nMPI_T categories (%d):\n", nc);
    for (int i = 0; i < nc; i++) {
        char name[256], desc[1024], parent[256] = "";
        int nl = sizeof name, dl = sizeof desc, ncv, npv, nsub;
        if (MPI_T_category_get_info(i, name, &nl, desc, &dl, &ncv, &npv, &nsub)) continue;
        for (int j = 0; j < nc && !parent[0]; j++) {      /* the category that holds this one */
            int k, sub[64];
            char pn[256];
            int pl = sizeof pn;
            if (MPI_T_category_get_info(j, pn, &pl, NULL, NULL, NULL, NULL, &k) || k <= 0) continue;
            if (k > 64) k = 64;
            MPI_T_category_get_categories(j, k, sub);
            for (int m = 0; m < k; m++)
                if (sub[m] == i) snprintf(parent, sizeof parent, "%s", pn);
        }
        char counts[96];
        snprintf(counts, sizeof counts, "%d control, %d performance variables, %d subcategories", ncv, npv, nsub);
        if (parsable) {
            kv("category", name, "parent", parent);
            kv("category", name, "members", counts);
            kv("category", name, "description", desc);
        } else {
            printf("%25s: category \"%s\" (%s)\n", parent[0] ? parent : "-", name, counts);
            printf("%25s  %s\n", "", desc);
        }
    }
    MPI_T_finalize();
    return 0;
}
