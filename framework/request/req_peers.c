/* Which transport serves which peer, as KUMI_VERBOSE >= 1 tells it at
 * MPI_Init (the request layer's kumi_req_init chose them). */
#include "request/request.h"
#include "registry/registry.h"
#include <stdio.h>
#include <string.h>

void kumi_req_log_peers(int nworld, const struct kumi_p2p_ops *const *peer_ops, int ntr,
                        const struct kumi_p2p_ops *const *tr_ops, struct kumi_comp_entry *const *tr_entry,
                        const bool *used)
{
    int i, p;
    for (i = 0; i < ntr; i++) {                  /* which peers each transport serves: "1-3,5" */
        if (!used[i]) continue;
        char list[512];
        size_t l = 0;
        list[0] = 0;
        for (p = 0; p < nworld && l + 32 < sizeof list; p++) {
            if (peer_ops[p] != tr_ops[i] || (p > 0 && peer_ops[p - 1] == tr_ops[i])) continue;
            int q = p;
            while (q + 1 < nworld && peer_ops[q + 1] == tr_ops[i]) q++;
            l += (size_t)snprintf(list + l, sizeof list - l, q > p ? "%s%d-%d" : "%s%d", l ? "," : "", p, q);
        }
        kumi_log(1, "p2p/%s serves ranks %s", tr_entry[i]->name, list);
    }
    if (nworld > 256) return;
    for (p = 0; p < nworld; p++) {               /* one line per peer: "rank 0 -> rank 2: tcp 10.0.0.2:40123" */
        char how[160];
        const char *tn = "?";
        how[0] = 0;
        for (i = 0; i < ntr; i++)
            if (tr_ops[i] == peer_ops[p]) tn = tr_entry[i]->name;
        if (peer_ops[p]->hdr.size > offsetof(struct kumi_p2p_ops, describe) && peer_ops[p]->describe &&
            peer_ops[p]->describe(p, how, sizeof how) != 0)
            how[0] = 0;
        kumi_log(1, "rank %d -> rank %d: %s%s%s", kumi_world_rank(), p, tn, how[0] ? " " : "", how);
    }
}
