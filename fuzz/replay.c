/*
 * A main() for the fuzz targets when libFuzzer is not there (gcc, or a
 * normal build): run LLVMFuzzerTestOneInput once per file named on the
 * command line, directories expanded in name order.  The test suite uses it
 * to replay the seed corpus and every saved crash under whatever sanitizers
 * that build has, so a fixed crash stays fixed without clang.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data = NULL;
    size_t len = 0, cap = 0, n;

    if (f == NULL) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            cap = cap ? cap * 2 : 4096;
            data = realloc(data, cap);
            if (data == NULL) {
                fclose(f);
                return -1;
            }
        }
        n = fread(data + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    /* An exact-size copy, so a sanitizer sees reads past the input. */
    uint8_t *exact = malloc(len ? len : 1);
    if (exact == NULL) {
        free(data);
        return -1;
    }
    memcpy(exact, data, len);
    free(data);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    struct dirent **names;
    int n, rc = 0;

    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        (*count)++;
        return run_file(path);
    }
    n = scandir(path, &names, NULL, by_name);
    if (n < 0) {
        perror(path);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char *p;
            if (asprintf(&p, "%s/%s", path, names[i]->d_name) < 0)
                rc = -1;
            else {
                if (run_path(p, count) != 0)
                    rc = -1;
                free(p);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int count = 0, rc = 0;

    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i], &count) != 0)
            rc = 1;
    printf("%s: %d inputs, %s\n", argv[0], count, rc ? "errors" : "ok");
    return rc;
}
