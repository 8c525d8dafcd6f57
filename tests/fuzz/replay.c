/*
 * replay.c — runs fuzz corpora without libFuzzer, so ordinary test runs
 * (with sanitizers) replay every input ever kept: `replay DIR...` feeds
 * each file to LLVMFuzzerTestOneInput.  For the loader target each file is
 * also replayed with its checksum fixed up, which is how crafted RESTORE
 * payloads reach the deep checks.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_fix_checksum(uint8_t *buf, size_t len) __attribute__((weak));

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    size_t got = fread(buf, 1, (size_t)len, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    if (fuzz_fix_checksum) {
        fuzz_fix_checksum(buf, got);
        LLVMFuzzerTestOneInput(buf, got);
    }
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    int files = 0;
    for (int i = 1; i < argc; i++) {
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            files += replay_file(argv[i]);
            continue;
        }
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            files += replay_file(path);
        }
        closedir(d);
    }
    printf("replayed %d inputs: %d passed, 0 failed\n", files, files);
    return files > 0 ? 0 : 1;
}
