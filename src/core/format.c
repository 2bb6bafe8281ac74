/* Numbers for people: SI suffixes with three significant digits, bytes, durations with a unit
 * chosen for reading, and the parsers of durations and FLOP/s as people type them ("250ms",
 * "3.5min", "312T").
 * Every table the library renders uses these, so one figure reads the same everywhere. Exact
 * integers (CSV, JSON) never go through them. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *fm_format_si(double v, char *buf)
{
    static const char *const suffix[] = {"", " K", " M", " G", " T", " P", " E"};
    int i = 0;
    double a = fabs(v);
    if (!isfinite(v)) {
        snprintf(buf, FM_FORMAT_SIZE, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return buf;
    }
    while (a >= 999.5 && i < 6) {
        a /= 1000.0;
        v /= 1000.0;
        i++;
    }
    if (i == 0 && v == floor(v))
        snprintf(buf, FM_FORMAT_SIZE, "%.0f", v);
    else if (a >= 99.95)
        snprintf(buf, FM_FORMAT_SIZE, "%.0f%s", v, suffix[i]);
    else if (a >= 9.995)
        snprintf(buf, FM_FORMAT_SIZE, "%.1f%s", v, suffix[i]);
    else
        snprintf(buf, FM_FORMAT_SIZE, "%.2f%s", v, suffix[i]);
    return buf;
}

const char *fm_format_bytes(double v, char *buf)
{
    char tmp[FM_FORMAT_SIZE];
    fm_format_si(v, tmp);
    snprintf(buf, FM_FORMAT_SIZE, "%.28s%sB", tmp, strchr(tmp, ' ') ? "" : " ");
    return buf;
}

const char *fm_format_time(double s, char *buf)
{
    double a = fabs(s);
    if (!isfinite(s))
        snprintf(buf, FM_FORMAT_SIZE, "inf");
    else if (a == 0)
        snprintf(buf, FM_FORMAT_SIZE, "0 s");
    else if (a < 1e-6)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g ns", s * 1e9);
    else if (a < 1e-3)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g us", s * 1e6);
    else if (a < 1.0)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g ms", s * 1e3);
    else if (a < 120.0)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g s", s);
    else if (a < 7200.0)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g min", s / 60.0);
    else if (a < 172800.0)
        snprintf(buf, FM_FORMAT_SIZE, "%.3g h", s / 3600.0);
    else
        snprintf(buf, FM_FORMAT_SIZE, "%.3g days", s / 86400.0);
    return buf;
}

/* A non-negative finite number at the start of text; *end past it and the spaces after. */
static bool leading_number(const char *text, double *v, const char **end)
{
    if (!text)
        return false;
    char *e;
    *v = strtod(text, &e);
    if (e == text || !isfinite(*v) || *v < 0)
        return false;
    while (*e == ' ')
        e++;
    *end = e;
    return true;
}

bool fm_duration_parse(const char *text, double *seconds)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1.0},     {"s", 1.0},    {"ms", 1e-3}, {"us", 1e-6},
                 {"min", 60.0}, {"h", 3600.0}, {"d", 86400.0}};
    double v;
    const char *end;
    if (!leading_number(text, &v, &end))
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].unit) == 0) {
            *seconds = v * units[i].scale;
            return true;
        }
    }
    return false;
}

bool fm_bytes_parse(const char *text, double *bytes)
{
    static const struct {
        const char *unit;
        double scale;
    } units[] = {{"", 1}, {"b", 1}, {"k", 1e3}, {"kb", 1e3}, {"m", 1e6}, {"mb", 1e6},
                 {"g", 1e9}, {"gb", 1e9}, {"t", 1e12}, {"tb", 1e12}, {"kib", 1024.0},
                 {"mib", 1048576.0}, {"gib", 1073741824.0}, {"tib", 1099511627776.0}};
    double v;
    const char *end;
    if (!leading_number(text, &v, &end) || v < 0)
        return false;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i].unit) == 0) {
            *bytes = v * units[i].scale;
            return isfinite(*bytes);
        }
    }
    return false;
}

bool fm_flops_parse(const char *text, double *flops)
{
    static const struct {
        char prefix;
        double scale;
    } prefixes[] = {{'k', 1e3}, {'K', 1e3}, {'M', 1e6}, {'G', 1e9}, {'g', 1e9}, {'T', 1e12},
                    {'t', 1e12}, {'P', 1e15}, {'p', 1e15}, {'E', 1e18}};
    static const char *const units[] = {"", "flop/s", "flops", "flop", "f/s"};
    double v;
    const char *end;
    if (!leading_number(text, &v, &end))
        return false;
    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (*end == prefixes[i].prefix) {
            v *= prefixes[i].scale;
            end++;
            break;
        }
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcasecmp(end, units[i]) == 0) {
            *flops = v;
            return isfinite(v);
        }
    }
    return false;
}
