/* ckpt/image: the component (kumi/ckpt.h) around the process image back end
 * (ckpt_write.c; restart: kumi_restart.c). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <kumi/ckpt.h>

#include "kumi_ckpt_image.h"

static int image_open(char *why, size_t whylen)
{
    if (kumi_registry_listing())
        snprintf(why, whylen, "threads saved (stopped with signal %d); restart: kumi_restart IMAGE", SIGRTMAX - 1);
    return KUMI_OK;
}

static const struct kumi_ckpt_ops image_ops = {
    .hdr = KUMI_CKPT_OPS_HDR,
    .write = kumi_ckpt_image_write,
    .info = kumi_ckpt_image_info,
    .restart_program = "kumi_restart",
    .restart_env = kumi_ckpt_image_restart_env,
};

KUMI_EXPORT const struct kumi_component kumi_ckpt_image_component = {
    .abi_version = KUMI_COMPONENT_ABI_VERSION,
    .framework = "ckpt", .name = "image",
    .version = { 0, 1, 0 },
    .description = "process images of its own (memory, registers, fds, signals; restart with kumi_restart)",
    .priority = 10,
    .open = image_open,
    .ops = &image_ops,
};
