/* MPI_T: categories (see mpit.h).
 *
 * One category per framework ("kumi" for the library's own parameters, then
 * the frameworks of the registry: rpim, p2p, coll) and one per component,
 * named <framework>_<component> as the component's parameters are
 * (p2p_tcp, kumi_base), a subcategory of its framework's.  A control
 * variable, performance variable or event belongs to the category of the
 * component that owns it (its framework's when it has no component).  The
 * table only grows, so indices stay; a new component (its parameters
 * registered when MPI_Init opens the components) adds a category and counts
 * as a change for MPI_T_category_changed. */
#include "mpit/mpit.h"
#include <stdio.h>
#include <stdlib.h>

struct cat {
    char name[140];
    char desc[200];
    char fw[64], comp[64];
    int parent;                     /* -1: a framework's */
};
static struct cat *cats;
static int ncats;
static int update_number;
static int seen_params = -1, seen_entries = -1;

static int find(const char *fw, const char *comp)
{
    for (int i = 0; i < ncats; i++)
        if (!strcmp(cats[i].fw, fw) && !strcmp(cats[i].comp, comp)) return i;
    return -1;
}

static int ensure(const char *fw, const char *comp)
{
    int i = find(fw, comp);
    if (i >= 0) return i;
    int parent = -1;
    if (*comp) {
        parent = ensure(fw, "");
        if (parent < 0) return -1;
    }
    struct cat *n = realloc(cats, (size_t)(ncats + 1) * sizeof *n);
    if (!n) return -1;
    cats = n;
    struct cat *c = &cats[ncats];
    memset(c, 0, sizeof *c);
    snprintf(c->fw, sizeof c->fw, "%s", fw);
    snprintf(c->comp, sizeof c->comp, "%s", comp);
    c->parent = parent;
    if (*comp) {
        snprintf(c->name, sizeof c->name, "%s_%s", fw, comp);
        if (!strcmp(fw, "kumi"))
            snprintf(c->desc, sizeof c->desc, "Kumi's %s parameters and counters", comp);
        else
            snprintf(c->desc, sizeof c->desc, "Component %s of framework %s", comp, fw);
    } else {
        snprintf(c->name, sizeof c->name, "%s", fw);
        if (!strcmp(fw, "kumi"))
            snprintf(c->desc, sizeof c->desc, "The Kumi library (request layer, progress, collectives, RMA)");
        else
            snprintf(c->desc, sizeof c->desc, "Framework %s and its components", fw);
    }
    update_number++;
    return ncats++;
}

void kumi_mpit_cat_refresh(void)
{
    int np = kumi_param_count();
    struct kumi_comp_entry **ents;
    int ne = kumi_registry_entries(&ents);
    if (np == seen_params && ne == seen_entries) return;
    seen_params = np;
    seen_entries = ne;
    ensure("kumi", "");
    for (int f = 0; kumi_frameworks[f]; f++) ensure(kumi_frameworks[f], "");
    for (int i = 0; i < ne; i++)
        if (ents[i]->comp) ensure(ents[i]->framework, ents[i]->name);
    static struct kumi_param_info info;
    for (int i = 0; i < np; i++)
        if (kumi_param_get_info(i, &info) == MPI_SUCCESS) ensure(info.framework, info.component);
    const char *fw, *comp;
    for (int i = 0; i < kumi_mpit_pvar_count(); i++) {
        kumi_mpit_pvar_owner(i, &fw, &comp);
        ensure(fw, comp);
    }
    for (int i = 0; i < kumi_mpit_event_count(); i++) {
        kumi_mpit_event_owner(i, &fw, &comp);
        ensure(fw, comp);
    }
}

enum member { M_CVAR, M_PVAR, M_EVENT, M_CAT };

/* The members of category c of a kind: their number, and the first len
 * indices into out. */
static int members(int c, enum member kind, int len, int *out)
{
    int n = 0;
    const char *fw, *comp;
    static struct kumi_param_info info;
    int total = kind == M_CVAR ? kumi_param_count() : kind == M_PVAR ? kumi_mpit_pvar_count()
              : kind == M_EVENT ? kumi_mpit_event_count() : ncats;
    for (int i = 0; i < total; i++) {
        int in;
        switch (kind) {
        case M_CVAR:
            if (kumi_param_get_info(i, &info) != MPI_SUCCESS) continue;
            in = !strcmp(info.framework, cats[c].fw) && !strcmp(info.component, cats[c].comp);
            break;
        case M_PVAR:
            kumi_mpit_pvar_owner(i, &fw, &comp);
            in = !strcmp(fw, cats[c].fw) && !strcmp(comp, cats[c].comp);
            break;
        case M_EVENT:
            kumi_mpit_event_owner(i, &fw, &comp);
            in = !strcmp(fw, cats[c].fw) && !strcmp(comp, cats[c].comp);
            break;
        default:
            in = cats[i].parent == c;
            break;
        }
        if (!in) continue;
        if (out && n < len) out[n] = i;
        n++;
    }
    return n;
}

int kumi_mpi_t_category_get_num(int *num_cat)
{
    MPIT_ENTER();
    if (!num_cat) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_mpit_cat_refresh();
    *num_cat = ncats;
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                                 int *num_cvars, int *num_pvars, int *num_categories)
{
    MPIT_ENTER();
    kumi_mpit_cat_refresh();
    if (cat_index < 0 || cat_index >= ncats) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    kumi_mpit_string(cats[cat_index].name, name, name_len);
    kumi_mpit_string(cats[cat_index].desc, desc, desc_len);
    if (num_cvars) *num_cvars = members(cat_index, M_CVAR, 0, NULL);
    if (num_pvars) *num_pvars = members(cat_index, M_PVAR, 0, NULL);
    if (num_categories) *num_categories = members(cat_index, M_CAT, 0, NULL);
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_category_get_num_events(int cat_index, int *num_events)
{
    MPIT_ENTER();
    kumi_mpit_cat_refresh();
    if (cat_index < 0 || cat_index >= ncats) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (!num_events) MPIT_RETURN(MPI_T_ERR_INVALID);
    *num_events = members(cat_index, M_EVENT, 0, NULL);
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_category_get_index(const char *name, int *cat_index)
{
    MPIT_ENTER();
    if (!name || !cat_index) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_mpit_cat_refresh();
    for (int i = 0; i < ncats; i++)
        if (!strcmp(cats[i].name, name)) {
            *cat_index = i;
            MPIT_RETURN(MPI_SUCCESS);
        }
    MPIT_RETURN(MPI_T_ERR_INVALID_NAME);
}

static int get_members(int cat_index, int len, int indices[], enum member kind)
{
    MPIT_ENTER();
    kumi_mpit_cat_refresh();
    if (cat_index < 0 || cat_index >= ncats) MPIT_RETURN(MPI_T_ERR_INVALID_INDEX);
    if (len < 0 || (len > 0 && !indices)) MPIT_RETURN(MPI_T_ERR_INVALID);
    members(cat_index, kind, len, indices);
    MPIT_RETURN(MPI_SUCCESS);
}

int kumi_mpi_t_category_get_cvars(int cat_index, int len, int indices[])
{
    return get_members(cat_index, len, indices, M_CVAR);
}

int kumi_mpi_t_category_get_pvars(int cat_index, int len, int indices[])
{
    return get_members(cat_index, len, indices, M_PVAR);
}

int kumi_mpi_t_category_get_events(int cat_index, int len, int indices[])
{
    return get_members(cat_index, len, indices, M_EVENT);
}

int kumi_mpi_t_category_get_categories(int cat_index, int len, int indices[])
{
    return get_members(cat_index, len, indices, M_CAT);
}

int kumi_mpi_t_category_changed(int *update_number_)
{
    MPIT_ENTER();
    if (!update_number_) MPIT_RETURN(MPI_T_ERR_INVALID);
    kumi_mpit_cat_refresh();
    *update_number_ = update_number;
    MPIT_RETURN(MPI_SUCCESS);
}
