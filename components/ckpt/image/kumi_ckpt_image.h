/* ckpt/image: the process image back end, callable directly (the restart
 * program and the tests link it as a static library; the ckpt component
 * kumi_ckpt_image.so exposes the same through struct kumi_ckpt_ops).
 *
 *   kumi_ckpt_image_write(path, flags, err, errlen)
 *       writes the image of the calling process to `path` (a directory:
 *       DIR/image.PID) and returns KUMI_CKPT_WRITTEN; when the image is
 *       restarted (`kumi_restart IMAGE`), the same call returns a second
 *       time, in the restarted process, with KUMI_CKPT_RESTARTED (like
 *       setjmp).  -1: nothing written, the reason in err.  Every thread is
 *       saved: the others are stopped with signal SIGRTMAX-1 (a thread that
 *       blocks it makes the call fail after 2 s: "... did not stop ...").
 *   kumi_ckpt_image_info(path, fd, err, errlen)
 *       checks an image and describes it on fd; 0, or -1 with the reason.
 *   kumi_ckpt_image_restart_env()
 *       in a restarted process (after the write returned KUMI_CKPT_RESTARTED):
 *       the environment kumi_restart ran with (NULL-terminated "NAME=VALUE"
 *       strings; the new launcher's: new rank addresses, job secret...), as
 *       environ is the saved one; NULL in a process that was not restarted. */
#ifndef KUMI_CKPT_IMAGE_API_H
#define KUMI_CKPT_IMAGE_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef KUMI_CKPT_WRITTEN            /* the same in kumi/ckpt.h */
#define KUMI_CKPT_WRITTEN 0
#define KUMI_CKPT_RESTARTED 1
#define KUMI_CKPT_FSYNC 1          /* flags: fsync the image before the rename */
#endif

int kumi_ckpt_image_write(const char *path, int flags, char *err, size_t errlen);
int kumi_ckpt_image_info(const char *path, int fd, char *err, size_t errlen);
const char *const *kumi_ckpt_image_restart_env(void);

#ifdef __cplusplus
}
#endif
#endif
