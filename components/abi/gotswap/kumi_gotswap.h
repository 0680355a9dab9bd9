/*
 * kumi_gotswap.h: runtime GOT swap (libkumi_gotswap.so, components/abi/gotswap).
 *
 * In a process that mixes MPI ABIs (a program built against Open MPI that
 * loads a plug-in built against MPICH; a foreign Fortran MPI library over the
 * C library) several objects import the same name (MPI_Send) but must reach
 * different definitions.  The dynamic loader binds each import to the first
 * definition in the global scope, so this library rewrites, in objects that
 * are already loaded and relocated, the GOT slots of chosen symbols:
 *
 *   - the object's file is found with dl_iterate_phdr (the main program's is
 *     /proc/self/exe) and read with libelf through its program headers
 *     (PT_DYNAMIC: DT_RELA and DT_JMPREL tables, DT_SYMTAB, DT_STRTAB), so
 *     files without section headers work too;
 *   - the slots are those of R_*_JUMP_SLOT (calls through the PLT) and
 *     R_*_GLOB_DAT (-fno-plt calls, function addresses, data addresses)
 *     relocations naming the symbol; each is the load base plus r_offset;
 *   - a slot in a read-only page (RELRO after relocation, -z now) is written
 *     under mprotect, and the page gets back the protection /proc/self/maps
 *     gave it;
 *   - rules (kumi_got_rule_add) are applied again to objects loaded later:
 *     the library swaps the dlopen / dlmopen slots of every loaded object to
 *     its own kumi_got_dlopen / kumi_got_dlmopen, which open the object as the
 *     caller would have (its namespace, its DT_RUNPATH / DT_RPATH, $ORIGIN)
 *     and then patch every new object, dependencies included, before dlopen
 *     returns.
 *
 * Supported: x86_64 (aarch64 coded, untested; ELF64 RELA only), PIE and non-PIE programs,
 * lazy and immediate binding.  Every function is thread-safe (one lock);
 * a slot is written with one aligned atomic store.  The library never swaps
 * its own slots.  Limits: see the Kumi README (section "GOT swap").
 *
 * Object patterns: NULL matches every loaded object; "" the main program;
 * a pattern with a '/' is a shell glob (fnmatch) on the object's path, any
 * other one a glob on its file name ("libplug.so", "libmpi*.so*").
 * The vdso and objects without a file never match.
 *
 * Namespaces: the loader shows this library the objects of its own namespace;
 * those of other namespaces (dlmopen) are reached when the namespace was made
 * through the hook (gotswap then keeps its first object open, so the list
 * stays valid), and by kumi_got_swap_handle with a handle of one of them.
 */
#ifndef KUMI_GOTSWAP_H
#define KUMI_GOTSWAP_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes (negative returns). */
#define KUMI_GOT_EINVAL       (-1)   /* bad argument (NULL symbol or target, ...) */
#define KUMI_GOT_ENOOBJ       (-2)   /* no loaded object matches the pattern / handle */
#define KUMI_GOT_EELF         (-3)   /* an object's file cannot be read or does not match it */
#define KUMI_GOT_EPROT        (-4)   /* a slot's page cannot be made writable */
#define KUMI_GOT_ENOMEM       (-5)
#define KUMI_GOT_EUNSUPPORTED (-6)   /* architecture or relocation format not supported */

/* In every loaded object that matches object_pattern, point the GOT slots of
 * `symbol` at new_target.  Returns the number of slots rewritten (slots that
 * already held new_target are not counted; 0 when no matching object imports
 * the symbol: not an error), or a negative KUMI_GOT_* code; on an error in
 * one object the others are still processed.  If old_target is not NULL it
 * receives the previous target of the first slot found (NULL when none): the
 * bound definition, also when lazy binding had not resolved the slot yet. */
int kumi_got_swap(const char *object_pattern, const char *symbol, void *new_target, void **old_target);

/* The same for exactly the object of a dlopen / dlmopen handle (also one of
 * dlopen(NULL) = the main program), in any namespace. */
int kumi_got_swap_handle(void *dl_handle, const char *symbol, void *new_target, void **old_target);

/* A rule: swap `symbol` to `target` in every object that matches `pattern`,
 * now and in every object loaded later (dlopen, dlmopen, and their
 * dependencies).  Applies it at once and returns the slots rewritten (>= 0) or
 * a negative KUMI_GOT_* code (the rule is kept unless the code is EINVAL or
 * ENOMEM).  A later rule for the same pattern and symbol replaces the earlier. */
int kumi_got_rule_add(const char *pattern, const char *symbol, void *target);
/* Several rules at once, applied in one pass over the objects (each object's
 * file is read once): what a shim that redirects a whole API does.  Checks
 * every rule first (EINVAL names the rule's index: then none is added). */
struct kumi_got_rule { const char *pattern; const char *symbol; void *target; };
int kumi_got_rules_add(const struct kumi_got_rule *rules, size_t n);
/* Forget every rule (slots already rewritten stay as they are). */
void kumi_got_rules_clear(void);
/* Apply the rules to objects loaded since the last time (needed only for
 * objects loaded around the hook, e.g. by a dlopen reached through a pointer
 * taken from dlsym).  Returns the slots rewritten or a negative code. */
int kumi_got_rules_apply(void);

/* fn(arg) is called after each object loaded through the hook (dlopen, dlmopen), before the
 * rules are applied to it, without gotswap's lock held (it may add rules: libkumi_abimix.so
 * classifies each new object and adds rules for it); installs the hook if no rule did yet.
 * NULL removes it.  Returns 0 or a negative KUMI_GOT_* code. */
int kumi_got_set_load_hook(void (*fn)(void *arg), void *arg);

/* The hooks: dlopen / dlmopen as the calling object would have done them,
 * followed by kumi_got_rules_apply(). */
void *kumi_got_dlopen(const char *file, int mode);
void *kumi_got_dlmopen(long lmid, const char *file, int mode);   /* lmid: an Lmid_t */

/* The message of this thread's last failure (names the object and the
 * reason), "" when none; a static text for a code. */
const char *kumi_got_error(void);
const char *kumi_got_strerror(int code);

#ifdef __cplusplus
}
#endif
#endif
