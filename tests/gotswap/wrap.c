/* libwrap.so: linked against libplug.so, so that dlopen("libwrap.so") loads
 * libplug.so as a dependency. */
int plug_who(void);
int wrap_who(void) { return plug_who(); }
