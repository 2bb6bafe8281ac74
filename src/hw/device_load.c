/* Loading the device table as every command sees it: the built-ins, then $FLOPMETER_DEVICES
 * (which must exist when set), then $XDG_CONFIG_HOME/flopmeter/devices.json when present, then
 * the user's --devices FILE, later entries overriding earlier ones (device_json.c reads each). */
#include "hw.h"

#include <stdlib.h>
#include <stdio.h>
#include <sys/stat.h>

static bool file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

enum fm_status fm_devices_load(struct fm_ctx *ctx, const char *user_file, struct fm_devices **out)
{
    struct fm_devices *devs = NULL;
    enum fm_status st = fm_devices_builtin(ctx, &devs);
    if (st)
        return st;
    /* $FLOPMETER_DEVICES names a file the user asked for: it must exist. */
    const char *env = getenv("FLOPMETER_DEVICES");
    if (env && *env) {
        if (!file_exists(env)) {
            st = fm_error(ctx, FM_ERR_IO,
                          "FLOPMETER_DEVICES=%s: no such file (unset it or point it at a device "
                          "JSON file, see docs/devices.md)",
                          env);
            goto fail;
        }
        st = fm_devices_add_file(devs, env);
        if (st)
            goto fail;
    }
    /* The XDG config file is optional: read it only when it is there. */
    char path[4096];
    const char *xdg = getenv("XDG_CONFIG_HOME");
    const char *home = getenv("HOME");
    path[0] = '\0';
    if (xdg && *xdg)
        snprintf(path, sizeof(path), "%s/flopmeter/devices.json", xdg);
    else if (home && *home)
        snprintf(path, sizeof(path), "%s/.config/flopmeter/devices.json", home);
    if (path[0] && file_exists(path)) {
        st = fm_devices_add_file(devs, path);
        if (st)
            goto fail;
    }
    if (user_file) {
        st = fm_devices_add_file(devs, user_file);
        if (st)
            goto fail;
    }
    *out = devs;
    return FM_OK;
fail:
    fm_devices_free(devs);
    *out = NULL;
    return st;
}
