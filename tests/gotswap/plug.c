/* libplug.so: linked against libB.so, loaded by a program linked against
 * libA.so.  Without a GOT swap its who() binds to libA's (first in the global
 * scope); with one it reaches libB's. */
#include <dlfcn.h>

int who(void);
int who2(void);
int plug_who(void) { return who(); }
int plug_who2(void) { return who2(); }               /* only called: a JUMP_SLOT alone (lazy) */
void *plug_who_addr(void) { return (void *)&who; }  /* through the GOT: GLOB_DAT */
/* the address of who's GOT slot (x86_64), to check its page's protection */
void **plug_who_slot(void)
{
#if defined(__x86_64__)
    void **p;
    __asm__("leaq who@GOTPCREL(%%rip), %0" : "=r"(p));
    return p;
#else
    return 0;
#endif
}
/* dlopen called from the plug-in: its own DT_RUNPATH / DT_RPATH ($ORIGIN:$ORIGIN/sub)
 * and $ORIGIN apply, also through gotswap's dlopen hook */
void *plug_dlopen(const char *name) { return dlopen(name, RTLD_NOW); }
