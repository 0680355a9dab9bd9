/* Unit test of the parameter parser (framework/registry/param.c), in process:
 * values of every type from the environment and from ~/.kumi/params.conf
 * (HOME is pointed at a fresh folder before the first registration), the
 * order of the sources, and bad input: a bad value keeps the lower source's
 * value, the call returns MPI_ERR_ARG whose message names the value, where it
 * came from (variable, or file:line), the parameter and the type expected,
 * and one warning with the same facts is printed.  Also: registering a name
 * twice, environment names, the warning about KUMI_* variables and file
 * lines that name no parameter, and run-time parameters (MPI_T writes). */
#include "registry/registry.h"
#include "core/core.h"
#include "ut.h"
#include "ut_errors.h"
#include <sys/stat.h>
#include <unistd.h>

static char home[] = "/tmp/kumi-ut-param-XXXXXX";
static char errfile[64];
static int errfd = -1, saved_err = -1;

/* stderr goes to a file between these two */
static void cap_begin(void)
{
    strcpy(errfile, "/tmp/kumi-ut-param-err-XXXXXX");
    errfd = mkstemp(errfile);
    fflush(stderr);
    saved_err = dup(2);
    dup2(errfd, 2);
}
static const char *cap_end(void)
{
    static char out[8192];
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    ssize_t n = pread(errfd, out, sizeof out - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(errfd);
    unlink(errfile);
    return out;
}


static int find_info(const char *full, struct kumi_param_info *pi)
{
    for (int i = 0; i < kumi_param_count(); i++)
        if (kumi_param_get_info(i, pi) == MPI_SUCCESS && !strcmp(pi->fullname, full)) return 1;
    return 0;
}

static int nreg;        /* a fresh component name per registration */

/* Register ut_e<n>_v of type t with the environment variable set to value. */
static int reg_env(enum kumi_param_type t, const char *value, void *storage, const char **warn)
{
    char comp[32], env[64];
    snprintf(comp, sizeof comp, "e%d", ++nreg);
    snprintf(env, sizeof env, "KUMI_UT_E%d_V", nreg);
    setenv(env, value, 1);
    cap_begin();
    int rc = MPI_SUCCESS;
    switch (t) {
    case KUMI_PARAM_INT: rc = kumi_param_register_int("ut", comp, "v", 7, "h", 1, storage); break;
    case KUMI_PARAM_SIZE: rc = kumi_param_register_size("ut", comp, "v", 7, "h", 1, storage); break;
    case KUMI_PARAM_BOOL: rc = kumi_param_register_bool("ut", comp, "v", 1, "h", 1, storage); break;
    case KUMI_PARAM_DOUBLE: rc = kumi_param_register_double("ut", comp, "v", 7.5, "h", 1, storage); break;
    case KUMI_PARAM_STRING: rc = kumi_param_register_string("ut", comp, "v", "dflt", "h", 1, storage); break;
    }
    *warn = cap_end();
    unsetenv(env);
    return rc;
}

static void good_int(const char *v, long long want)
{
    long long x = -1;
    const char *w;
    int rc = reg_env(KUMI_PARAM_INT, v, &x, &w);
    CHECK(rc == MPI_SUCCESS && x == want, "int '%s': rc %d (%s), value %lld, expected %lld", v, rc, msg(rc), x, want);
    CHECK(!*w, "int '%s' printed \"%s\"", v, w);
}
static void good_size(const char *v, size_t want)
{
    size_t x = 1;
    const char *w;
    int rc = reg_env(KUMI_PARAM_SIZE, v, &x, &w);
    CHECK(rc == MPI_SUCCESS && x == want, "size '%s': rc %d (%s), value %zu, expected %zu", v, rc, msg(rc), x, want);
    CHECK(!*w, "size '%s' printed \"%s\"", v, w);
}
static void good_bool(const char *v, int want)
{
    int x = -1;
    const char *w;
    int rc = reg_env(KUMI_PARAM_BOOL, v, &x, &w);
    CHECK(rc == MPI_SUCCESS && x == want, "bool '%s': rc %d (%s), value %d, expected %d", v, rc, msg(rc), x, want);
}
static void good_double(const char *v, double want)
{
    double x = -1;
    const char *w;
    int rc = reg_env(KUMI_PARAM_DOUBLE, v, &x, &w);
    CHECK(rc == MPI_SUCCESS && x == want, "double '%s': rc %d (%s), value %g, expected %g", v, rc, msg(rc), x, want);
}

/* A bad value: the default stays, the error and the warning name the value,
 * the variable, the parameter and the type. */
static void bad(enum kumi_param_type t, const char *v)
{
    union { long long i; size_t z; int b; double d; const char *s; } x;
    memset(&x, 0, sizeof x);
    const char *w;
    int rc = reg_env(t, v, &x, &w);
    char var[64], par[64], val[300], type[64];
    snprintf(var, sizeof var, "KUMI_UT_E%d_V", nreg);
    snprintf(par, sizeof par, "parameter ut_e%d_v", nreg);
    snprintf(val, sizeof val, "'%s'", v);
    snprintf(type, sizeof type, "expects %s", kumi_param_type_name(t));
    CHECK(cls(rc) == MPI_ERR_ARG, "%s '%s' accepted (rc %d)", kumi_param_type_name(t), v, rc);
    CHECK_HAS(msg(rc), val, var, par, type);
    CHECK_HAS(w, "bad value", val, var, par, type, "keeping");
    switch (t) {
    case KUMI_PARAM_INT: CHECK(x.i == 7, "int '%s': value %lld, expected the default 7", v, x.i); break;
    case KUMI_PARAM_SIZE: CHECK(x.z == 7, "size '%s': value %zu, expected the default 7", v, x.z); break;
    case KUMI_PARAM_BOOL: CHECK(x.b == 1, "bool '%s': value %d, expected the default 1", v, x.b); break;
    case KUMI_PARAM_DOUBLE: CHECK(x.d == 7.5, "double '%s': value %g, expected the default", v, x.d); break;
    default: break;
    }
}

static void test_env(void)
{
    UT_CASE("int");
    good_int("42", 42);
    good_int("  -42\t", -42);
    good_int("+3", 3);
    good_int("0x1f", 31);
    good_int("-0x10", -16);
    good_int("9223372036854775807", 9223372036854775807LL);
    bad(KUMI_PARAM_INT, "");
    bad(KUMI_PARAM_INT, "4 2");
    bad(KUMI_PARAM_INT, "42abc");
    bad(KUMI_PARAM_INT, "0x");
    bad(KUMI_PARAM_INT, "9223372036854775808");
    bad(KUMI_PARAM_INT, "1k");

    UT_CASE("size");
    good_size("0", 0);
    good_size("128k", 128 << 10);
    good_size("128K", 128 << 10);
    good_size("3m", 3u << 20);
    good_size("2g", (size_t)2 << 30);
    good_size("1t", (size_t)1 << 40);
    good_size("4kb", 4096);
    good_size("4KiB", 4096);
    good_size(" 0x10 ", 16);
    bad(KUMI_PARAM_SIZE, "-1");
    bad(KUMI_PARAM_SIZE, "1x");
    bad(KUMI_PARAM_SIZE, "1kk");
    bad(KUMI_PARAM_SIZE, "1 k");
    bad(KUMI_PARAM_SIZE, "k");
    bad(KUMI_PARAM_SIZE, "17179869184g");          /* 2^34 GiB: does not fit in 64 bits */
    bad(KUMI_PARAM_SIZE, "18446744073709551616");

    UT_CASE("bool");
    good_bool("1", 1); good_bool("yes", 1); good_bool("TRUE", 1); good_bool("On", 1);
    good_bool("0", 0); good_bool("no", 0); good_bool("False", 0); good_bool(" off ", 0);
    bad(KUMI_PARAM_BOOL, "2");
    bad(KUMI_PARAM_BOOL, "maybe");
    bad(KUMI_PARAM_BOOL, "");

    UT_CASE("double");
    good_double("1.5", 1.5);
    good_double(" -2e3 ", -2000);
    good_double("0x10", 16);
    bad(KUMI_PARAM_DOUBLE, "nan");
    bad(KUMI_PARAM_DOUBLE, "inf");
    bad(KUMI_PARAM_DOUBLE, "1.5x");
    bad(KUMI_PARAM_DOUBLE, "1e999");
    bad(KUMI_PARAM_DOUBLE, "");

    UT_CASE("string");
    const char *s = NULL, *w;
    int rc = reg_env(KUMI_PARAM_STRING, " spaced value ", &s, &w);
    CHECK(rc == MPI_SUCCESS && s && !strcmp(s, " spaced value "), "string kept as given, got \"%s\"", s ? s : "(null)");
    rc = reg_env(KUMI_PARAM_STRING, "", &s, &w);
    CHECK(rc == MPI_SUCCESS && s && !strcmp(s, ""), "an empty string is a value, got \"%s\"", s ? s : "(null)");
}

static void test_file(void)
{
    UT_CASE("params.conf");
    long long a = 0, c = 0, d = 0, e = 0, g = 0;
    size_t b = 0;
    const char *q = NULL, *qs = NULL;
    cap_begin();
    kumi_param_register_string("ut", "f", "s", "x", "h", 1, &qs);
    kumi_param_register_int("ut", "f", "a", 1, "h", 1, &a);
    kumi_param_register_size("ut", "f", "b", 1, "h", 1, &b);
    kumi_param_register_int("ut", "f", "c", 1, "h", 1, &c);
    kumi_param_register_string("ut", "f", "q", "x", "h", 1, &q);
    int rcd = kumi_param_register_int("ut", "f", "d", 1, "h", 1, &d);
    setenv("KUMI_UT_F_E", "99", 1);
    kumi_param_register_int("ut", "f", "e", 1, "h", 1, &e);
    unsetenv("KUMI_UT_F_E");
    kumi_param_register_int("ut", "f", "g", 1, "h", 1, &g);
    const char *w = cap_end();
    CHECK_INT(a, 5);                        /* inline comment */
    CHECK(b == 128 << 10, "ut_f_b from the file is %zu, expected 128k", b);
    CHECK_INT(c, 3);                        /* the last line naming it wins */
    CHECK(qs && !strcmp(qs, "two words"), "quoted string is \"%s\", expected \"two words\"", qs ? qs : "(null)");
    /* the inline comment is cut before the quotes are looked at */
    KNOWN(q && !strcmp(q, "a # b"), "params.conf: ut_f_q = \"a # b\" gives \"%s\", expected \"a # b\"",
          q ? q : "(null)");
    CHECK_INT(d, 1);                        /* bad value in the file: the default stays */
    CHECK_INT(e, 99);                       /* the environment beats the file */
    CHECK_INT(g, 8);                        /* the environment name in a file, any case */
    char path[300], where[512];
    snprintf(path, sizeof path, "%s/.kumi/params.conf", home);
    CHECK(cls(rcd) == MPI_ERR_ARG, "a bad value in the file gives MPI_ERR_ARG");
    snprintf(where, sizeof where, "%s:7:", path);
    CHECK_HAS(msg(rcd), where, "bad value 'four'", "parameter ut_f_d", "expected int");
    CHECK_HAS(w, where, "bad value 'four'", "parameter ut_f_d", "expected int", "keeping 1");
    /* lines that are not name = value: warned about, with file and line, at load */
    snprintf(where, sizeof where, "%s:9: expected 'name = value', ignoring \"just words\"", path);
    CHECK_HAS(w, where);
    snprintf(where, sizeof where, "%s:10: missing parameter name", path);
    CHECK_HAS(w, where);
    struct kumi_param_info pi;
    CHECK(find_info("ut_f_a", &pi) && pi.source == KUMI_PARAM_SRC_FILE && !strcmp(pi.source_detail, path),
          "ut_f_a comes from the file (source %d, \"%s\")", pi.source, pi.source_detail);
    CHECK(find_info("ut_f_e", &pi) && pi.source == KUMI_PARAM_SRC_ENV && !strcmp(pi.source_detail, "KUMI_UT_F_E"),
          "ut_f_e comes from the environment");
    CHECK(find_info("ut_f_d", &pi) && pi.source == KUMI_PARAM_SRC_DEFAULT && !strcmp(pi.value, "1") &&
          !strcmp(pi.defval, "1") && pi.type == KUMI_PARAM_INT, "ut_f_d keeps its default");
    CHECK(!strcmp(kumi_param_file_path(1), path), "kumi_param_file_path(1) is %s", kumi_param_file_path(1));
}

static void test_register(void)
{
    UT_CASE("registration");
    long long x = 0, y = 0;
    double z = 0;
    CHECK_INT(kumi_param_register_int("ut", "r", "x", 11, "h", 1, &x), MPI_SUCCESS);
    CHECK_INT(kumi_param_register_int("ut", "r", "x", 12, "h", 1, &y), MPI_SUCCESS);
    CHECK_INT(y, 11);                       /* the second registration gets the existing value */
    int rc = kumi_param_register_double("ut", "r", "x", 1.0, "h", 1, &z);
    CHECK(cls(rc) == MPI_ERR_ARG, "the same name with another type is an error");
    CHECK_HAS(msg(rc), "parameter ut_r_x registered again as double (it is int)");
    rc = kumi_param_register_int(NULL, "r", "x", 1, "h", 1, &x);
    CHECK_HAS(msg(rc), "framework and name are required");
    rc = kumi_param_register_int("ut", "r", "", 1, "h", 1, &x);
    CHECK_HAS(msg(rc), "framework and name are required");
    CHECK_INT(kumi_param_register_int("ut", NULL, "nocomp", 4, "h", 1, &x), MPI_SUCCESS);
    struct kumi_param_info pi;
    CHECK(find_info("ut_nocomp", &pi), "a parameter without component is named <fw>_<name>");

    UT_CASE("environment names");
    char env[128];
    kumi_param_envname("p2p_tcp_eager_limit", env, sizeof env);
    CHECK(!strcmp(env, "KUMI_P2P_TCP_EAGER_LIMIT"), "envname is %s", env);
    kumi_param_envname("kumi_base_verbose", env, sizeof env);
    CHECK(!strcmp(env, "KUMI_BASE_VERBOSE"), "envname of a global parameter is %s", env);
    kumi_param_envname("p2p_tcp_eager_limit", env, 8);
    CHECK(!strcmp(env, "KUMI_P2"), "a short buffer is cut, got %s", env);

    UT_CASE("unknown names");
    setenv("KUMI_UT_R_XX", "1", 1);         /* near miss of KUMI_UT_R_X */
    setenv("KUMI_ZZZZZZZZZZZZZZ", "1", 1);  /* nothing like it */
    setenv("KUMI_TEST_WHATEVER", "1", 1);   /* runtime variables are not parameters */
    cap_begin();
    kumi_param_warn_unknown();
    kumi_param_warn_unknown();              /* once per process */
    const char *w = cap_end();
    CHECK_HAS(w, "KUMI_UT_R_XX is set but names no parameter (did you mean KUMI_UT_R_X?)",
          "KUMI_ZZZZZZZZZZZZZZ is set but names no parameter (kumi_info --param all all lists them)",
          "params.conf:12: 'ut_f_zz' names no parameter (did you mean ut_f_");
    CHECK(!strstr(w, "KUMI_TEST_WHATEVER"), "a runtime variable was warned about: %s", w);
    const char *second = strstr(w, "KUMI_UT_R_XX is set");
    CHECK(second && !strstr(second + 1, "KUMI_UT_R_XX is set"), "warned twice");
    unsetenv("KUMI_UT_R_XX");
    unsetenv("KUMI_ZZZZZZZZZZZZZZ");
    unsetenv("KUMI_TEST_WHATEVER");
}

/* Run-time parameters (MPI_T_cvar_write): only one its owner declared so is
 * written, into the storage of its first registration; the value and its
 * source ("run time") show in the listing; strings are copied. */
static void test_runtime(void)
{
    UT_CASE("run-time parameters");
    static long long rt = 0, ro = 0;
    static const char *rs = NULL;
    CHECK_INT(kumi_param_register_int("ut", "rt", "w", 3, "h", 1, &rt), MPI_SUCCESS);
    CHECK_INT(kumi_param_register_int("ut", "rt", "ro", 4, "h", 1, &ro), MPI_SUCCESS);
    CHECK_INT(kumi_param_register_string("ut", "rt", "s", "a", "h", 1, &rs), MPI_SUCCESS);
    int iw = kumi_param_index("ut_rt_w"), iro = kumi_param_index("ut_rt_ro"), is = kumi_param_index("ut_rt_s");
    CHECK(iw >= 0 && iro >= 0 && is >= 0, "indices %d %d %d", iw, iro, is);
    CHECK_INT(kumi_param_index("ut_rt_nosuch"), -1);
    long long v = 42, got = 0;
    CHECK_INT(kumi_param_write(iw, &v), MPI_ERR_ACCESS);              /* not declared run-time yet */
    CHECK_INT(kumi_param_set_runtime("ut_rt_w"), MPI_SUCCESS);
    CHECK_INT(kumi_param_set_runtime("ut_rt_nosuch"), MPI_ERR_ARG);
    CHECK_INT(kumi_param_write(iw, &v), MPI_SUCCESS);
    CHECK_INT(rt, 42);                                                 /* the owner's variable */
    CHECK_INT(kumi_param_read(iw, &got, 0), MPI_SUCCESS);
    CHECK_INT(got, 42);
    CHECK_INT(kumi_param_write(iro, &v), MPI_ERR_ACCESS);
    CHECK_INT(ro, 4);
    struct kumi_param_info pi;
    CHECK(find_info("ut_rt_w", &pi) && pi.runtime && pi.source == KUMI_PARAM_SRC_RUNTIME &&
          !strcmp(pi.value, "42"), "listing of ut_rt_w: runtime %d, value %s", pi.runtime, pi.value);
    CHECK(find_info("ut_rt_ro", &pi) && !pi.runtime, "ut_rt_ro listed as run-time");
    CHECK_INT(kumi_param_set_runtime("ut_rt_s"), MPI_SUCCESS);
    char buf[8] = "xyz", out[4];
    CHECK_INT(kumi_param_write(is, buf), MPI_SUCCESS);
    buf[0] = 'q';                                                      /* the registry keeps a copy */
    CHECK(rs && !strcmp(rs, "xyz"), "string storage is %s", rs ? rs : "NULL");
    CHECK_INT(kumi_param_read(is, out, sizeof out), MPI_SUCCESS);
    CHECK(!strcmp(out, "xyz"), "read back %s", out);
}

int main(void)
{
    printf("no random input\n");
    /* a home of our own, with its params.conf, before the first registration reads it */
    if (!mkdtemp(home)) { perror("mkdtemp"); return 1; }
    setenv("HOME", home, 1);
    unsetenv("KUMI_RANK");                  /* warnings are printed outside a job */
    char dir[300], path[320];
    snprintf(dir, sizeof dir, "%s/.kumi", home);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/params.conf", dir);
    FILE *f = fopen(path, "w");
    fputs("# test file\n"                       /* 1 */
          "ut_f_a = 5   # five\n"               /* 2 */
          "UT_F_B=128k\n"                       /* 3 */
          "ut_f_c = 2\n"                        /* 4 */
          "ut_f_c = 3\n"                        /* 5 */
          "ut_f_q = \"a # b\"\n"                /* 6 */
          "ut_f_d = four\n"                     /* 7 */
          "ut_f_e = 5\n"                        /* 8 */
          "just words\n"                        /* 9 */
          " = 3\n"                              /* 10 */
          "KUMI_UT_F_G = 8\n"                   /* 11 */
          "ut_f_zz = 1\n"                       /* 12 */
          "ut_f_s = 'two words' # quoted\n", f); /* 13 */
    fclose(f);
    test_file();
    test_env();
    test_register();
    test_runtime();
    unlink(path);
    rmdir(dir);
    rmdir(home);
    return ut_done("test_param");
}
