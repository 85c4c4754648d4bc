/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Standalone driver for libFuzzer targets in non-fuzzing builds: runs
 * LLVMFuzzerTestOneInput over every file named on the command line (or in
 * the directories named), so corpora and crash reproducers are regression
 * tests under ASan/UBSan.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        long n;

        if (!f) {
                perror(path);
                return -1;
        }
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                perror(path);
                fclose(f);
                return -1;
        }
        buf = malloc((size_t) n + 1);
        if (!buf || fread(buf, 1, (size_t) n, f) != (size_t) n) {
                fprintf(stderr, "%s: read failed\n", path);
                free(buf);
                fclose(f);
                return -1;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t) n);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned ran = 0;

        for (int i = 1; i < argc; i++) {
                struct stat st;

                if (stat(argv[i], &st) < 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (S_ISDIR(st.st_mode)) {
                        DIR *d = opendir(argv[i]);
                        struct dirent *de;

                        if (!d) {
                                perror(argv[i]);
                                return 1;
                        }
                        while ((de = readdir(d))) {
                                char path[4096];

                                if (de->d_name[0] == '.')
                                        continue;
                                snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
                                if (run_file(path) < 0) {
                                        closedir(d);
                                        return 1;
                                }
                                ran++;
                        }
                        closedir(d);
                } else {
                        if (run_file(argv[i]) < 0)
                                return 1;
                        ran++;
                }
        }
        /* An empty corpus would make this test pass vacuously. */
        if (ran == 0) {
                fprintf(stderr, "no inputs ran\n");
                return 1;
        }
        printf("ran %u inputs\n", ran);
        return 0;
}
