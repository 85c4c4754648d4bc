/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "proc-table.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "procfs.h"
#include "strbuf.h"
#include "task-map.h"

struct proc_entry {
        uint32_t pid;
        bool used;
        bool exited;
        /* What /proc must still tell at the next sample (the kernel's records told the rest). */
        bool need_maps, need_comm, need_cgroup;
        uint32_t ppid;                  /* from FORK, SOURCE_NO_ID unknown */
        uint32_t gen;                   /* this process's generation: its threads' names are its own */
        uint64_t start;                 /* /proc/PID/stat starttime, 0 unknown */
        uint64_t born_ns;               /* perf time of what made the entry: a sample, FORK or COMM */
        uint64_t exit_ns, seen_ns;      /* perf time */
        uint64_t checked_losses;        /* the loss count when start was last compared */
};

struct thread_entry {
        uint32_t tid, pid, gen;
        bool used;
        uint64_t named_ns;              /* perf time of the name the task map holds (COMM, or /proc at a sample) */
};

/* A process that exited, to be told gone (pid 0: a FORK took its pid since). */
struct gone_pending {
        uint32_t pid;
        uint64_t tick;                  /* the ticks done when its EXIT came */
};

struct proc_table {
        char *procfs_root, *cgroup_root;
        const struct source_sink *sink;
        struct task_map *tasks;
        uint64_t now_ns;                /* the newest perf time seen */
        uint64_t losses;
        uint32_t next_gen;
        uint64_t ticks;                 /* proc_table_age() calls: drains of every ring */
        struct gone_pending gone[PROC_TABLE_GONE_PENDING]; /* a ring, oldest first */
        size_t gone_head, n_gone;
        struct proc_table_stats st;
        struct proc_entry procs[PROC_TABLE_SETS][PROC_TABLE_WAYS];
        struct thread_entry threads[PROC_TABLE_THREADS];
};

/*
 * Where cgroup v2 is mounted, from <procfs_root>/self/mountinfo (proc(5)):
 * "/sys/fs/cgroup" on a unified host, "/sys/fs/cgroup/unified" on a hybrid
 * one, nowhere on a host with v1 only (the v2 hierarchy still exists, and
 * /proc/PID/cgroup still names it "0::/"). NULL when not mounted.
 */
static char *find_cgroup2(const char *procfs_root) {
        char path[PATH_MAX], line[PROCFS_MAPS_LINE_MAX];
        char *found = NULL;
        FILE *f;

        snprintf(path, sizeof(path), "%s/self/mountinfo", procfs_root);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        while (!found && fgets(line, sizeof(line), f)) {
                /* "36 35 98:0 /root /mnt rw,noatime master:1 - cgroup2 cgroup2 rw": the mount
                 * point is field 5; after the " - " separator, the file system type. */
                char *sep = strstr(line, " - "), *mnt = line;

                if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
                        continue;
                for (int field = 1; field < 5 && mnt; field++) {
                        mnt = strchr(mnt, ' ');
                        if (mnt)
                                mnt++;
                }
                if (!mnt)
                        continue;
                mnt[strcspn(mnt, " ")] = '\0';
                /* Octal escapes (\040 for a space) are left: such a mount point is not worth it. */
                if (!strchr(mnt, '\\'))
                        found = xstrdup(mnt);
        }
        fclose(f);
        return found;
}

int proc_table_new(const char *procfs_root, const char *cgroup_root, const struct source_sink *sink,
                   struct task_map *tasks, struct proc_table **ret) {
        struct proc_table *p;

        if (!sink || !tasks || !ret)
                return -EINVAL;
        p = xcalloc(1, sizeof(*p));
        p->procfs_root = xstrdup(procfs_root ?: "/proc");
        p->cgroup_root = cgroup_root ? xstrdup(cgroup_root) : find_cgroup2(p->procfs_root);
        p->sink = sink;
        p->tasks = tasks;
        p->next_gen = 1;
        *ret = p;
        return 0;
}

struct proc_table *proc_table_free(struct proc_table *p) {
        if (!p)
                return NULL;
        free(p->procfs_root);
        free(p->cgroup_root);
        free(p);
        return NULL;
}

static struct proc_entry *set_of(struct proc_table *p, uint32_t pid) {
        return p->procs[task_map_hash(pid) % PROC_TABLE_SETS];
}

static struct proc_entry *find(struct proc_table *p, uint32_t pid) {
        struct proc_entry *set = set_of(p, pid);

        for (size_t w = 0; w < PROC_TABLE_WAYS; w++)
                if (set[w].used && set[w].pid == pid)
                        return &set[w];
        return NULL;
}

static void drop(struct proc_table *p, struct proc_entry *e) {
        e->used = false;
        p->st.procs--;
}

/* A new process pid: its old entry (another process with that pid) or a free way, else the oldest. */
static struct proc_entry *insert(struct proc_table *p, uint32_t pid) {
        struct proc_entry *set = set_of(p, pid), *e = find(p, pid), *exited = NULL, *oldest = NULL;

        if (e)
                drop(p, e);
        else
                for (size_t w = 0; w < PROC_TABLE_WAYS && !e; w++) {
                        struct proc_entry *x = &set[w];

                        if (!x->used)
                                e = x;
                        else if (x->exited && (!exited || x->exit_ns < exited->exit_ns))
                                exited = x;
                        else if (!x->exited && (!oldest || x->seen_ns < oldest->seen_ns))
                                oldest = x;
                }
        if (!e && exited) {
                e = exited;
                p->st.aged_out++;
                drop(p, e);
        } else if (!e) {
                e = oldest;
                p->st.evictions++;
                drop(p, e);
        }
        *e = (struct proc_entry) {
                .pid = pid,
                .used = true,
                .need_maps = true,
                .need_comm = true,
                .need_cgroup = true,
                .ppid = SOURCE_NO_ID,
                .gen = p->next_gen++,
                .born_ns = p->now_ns,
                .seen_ns = p->now_ns,
                .checked_losses = p->losses,
        };
        p->st.procs++;
        return e;
}

static void task_event(struct proc_table *p, const struct source_task *t) {
        if (p->sink->task)
                p->sink->task(p->sink->userdata, t);
}

static void name_thread(struct proc_table *p, uint32_t pid, uint32_t tid, const char *comm, uint64_t time_ns) {
        task_map_comm(p->tasks, pid, tid, comm);
        task_event(p, &(struct source_task) {
                .kind = SOURCE_TASK_COMM,
                .pid = pid,
                .tid = tid,
                .time_ns = time_ns,
                .comm = comm,
        });
}

static struct thread_entry *thread_slot(struct proc_table *p, uint32_t tid) {
        return &p->threads[task_map_hash(tid) % PROC_TABLE_THREADS];
}

static void mark_thread(struct proc_table *p, uint32_t pid, uint32_t tid, uint32_t gen, uint64_t named_ns) {
        *thread_slot(p, tid) = (struct thread_entry) {
                .tid = tid, .pid = pid, .gen = gen, .used = true, .named_ns = named_ns };
}

static int on_mapping(void *userdata, const struct source_mapping *m) {
        struct proc_table *p = userdata;

        p->st.mappings_read++;
        if (p->sink->mapping)
                p->sink->mapping(p->sink->userdata, m);
        return 0;
}

/* The parent's mappings under the child's pid: a child that forked without exec runs its parent's image. */
static int on_parent_mapping(void *userdata, const struct source_mapping *m) {
        void **a = userdata;
        struct source_mapping c = *m;

        c.pid = *(const uint32_t *) a[1];
        return on_mapping(a[0], &c);
}

/*
 * The cgroup's id as PERF_SAMPLE_CGROUP and PERF_RECORD_CGROUP state it:
 * the kernfs node id, which cgroupfs hands out as its file handle
 * (tools/perf/util/cgroup.c read_cgroup_id(), kernel/cgroup/cgroup.c
 * cgroup_id()). 0 when it cannot be read.
 */
static uint64_t cgroup_id_of(struct proc_table *p, const char *path) {
        char full[PATH_MAX];
        struct {
                struct file_handle fh;
                uint64_t id;
        } h = { .fh.handle_bytes = sizeof(uint64_t) };
        int mount_id;

        if (!p->cgroup_root)
                return 0;
        if (snprintf(full, sizeof(full), "%s%s", p->cgroup_root, path) >= (int) sizeof(full))
                return 0;
        if (name_to_handle_at(AT_FDCWD, full, &h.fh, &mount_id, 0) < 0 || h.fh.handle_bytes != sizeof(uint64_t))
                return 0;
        return h.id;
}

static void read_proc(struct proc_table *p, struct proc_entry *e, uint64_t cgroup_id) {
        char comm[PROCFS_COMM_MAX], cg[PROCFS_CGROUP_MAX];
        uint32_t pid = e->pid;
        int k;

        p->st.procs_read++;
        if (e->start == 0)
                (void) procfs_start_time(p->procfs_root, pid, &e->start);
        if (e->need_comm) {
                if (procfs_comm(p->procfs_root, pid, pid, comm, sizeof(comm)) == 0) {
                        name_thread(p, pid, pid, comm, 0);
                        /* The name as of now: at least as new as the sample that asked. */
                        mark_thread(p, pid, pid, e->gen, e->seen_ns);
                }
                e->need_comm = false;
        }
        if (e->need_maps) {
                k = procfs_exec_mappings(p->procfs_root, pid, on_mapping, p);
                if (k == -ENOENT && e->ppid != SOURCE_NO_ID && e->ppid != 0)
                        /* Gone already; it ran its parent's image unless an exec said otherwise. */
                        k = procfs_exec_mappings(p->procfs_root, e->ppid, on_parent_mapping,
                                                 (void *[]) { p, &pid });
                if (k == -ENOENT)
                        p->st.procs_gone++;
                e->need_maps = false;
        }
        if (e->need_cgroup) {
                /* The process's: its leader's (threads share it unless the cgroup is threaded). */
                k = procfs_cgroup(p->procfs_root, pid, pid, cg, sizeof(cg));
                if (k == 0) {
                        uint64_t id = cgroup_id_of(p, cg) ?: cgroup_id;

                        if (id)
                                task_map_cgroup(p->tasks, pid, id);
                        task_event(p, &(struct source_task) {
                                .kind = SOURCE_TASK_CGROUP,
                                .pid = pid,
                                .tid = pid,
                                .cgroup_id = id,
                                .cgroup_path = cg,
                        });
                }
                e->need_cgroup = false;
        }
}

void proc_table_sample(struct proc_table *p, uint32_t pid, uint32_t tid, uint64_t time_ns,
                       uint64_t cgroup_id) {
        struct thread_entry *t;
        struct proc_entry *e;

        if (pid == 0 || pid == SOURCE_NO_ID)
                return;
        p->now_ns = MAX(p->now_ns, time_ns);
        e = find(p, pid);
        /* A sample after the process's exit: another process has its pid (the FORK was lost). */
        if (e && e->exited && time_ns > e->exit_ns) {
                p->st.reused++;
                e = NULL;
        }
        /* Records were lost since this process was last looked at: is it still the same one? */
        if (e && e->checked_losses != p->losses) {
                uint64_t start;

                e->checked_losses = p->losses;
                if (procfs_start_time(p->procfs_root, pid, &start) == 0) {
                        if (e->start != 0 && start != e->start) {
                                p->st.reused++;
                                e = NULL;
                        } else
                                e->start = start;
                }
        }
        if (!e) {
                e = insert(p, pid);
                e->born_ns = time_ns;
        }
        e->seen_ns = MAX(e->seen_ns, time_ns);
        if (e->need_maps || e->need_comm || e->need_cgroup)
                read_proc(p, e, cgroup_id);

        if (tid != pid && tid != SOURCE_NO_ID) {
                t = thread_slot(p, tid);
                if (!t->used || t->tid != tid || t->pid != pid || t->gen != e->gen) {
                        char comm[PROCFS_COMM_MAX];

                        p->st.threads_read++;
                        if (procfs_comm(p->procfs_root, pid, tid, comm, sizeof(comm)) == 0)
                                name_thread(p, pid, tid, comm, 0);
                        mark_thread(p, pid, tid, e->gen, time_ns);
                }
        }
        if (tid != SOURCE_NO_ID && task_map_pid(p->tasks, tid) != pid)
                task_map_set_pid(p->tasks, tid, pid);
        if (cgroup_id != 0 && tid != SOURCE_NO_ID) {
                const struct task_info *ti = task_map_get(p->tasks, tid);

                if (ti && ti->cgroup_id != cgroup_id)
                        task_map_cgroup(p->tasks, tid, cgroup_id);
        }
}

void proc_table_comm(struct proc_table *p, const struct perf_data_comm *c) {
        uint64_t time = (c->rec.sid.valid & PERF_DATA_ID_TIME) ? c->rec.sid.time : 0;
        struct proc_entry *e = find(p, c->pid);

        p->now_ns = MAX(p->now_ns, time);
        if (c->exec) {
                /*
                 * A new image: the kernel reports its mappings (MMAP2 of the
                 * program and its interpreter, then of what they map) and this
                 * is its name; the old image's threads are gone (de_thread()).
                 * A process first met here needs only its cgroup from /proc.
                 */
                if (!e || e->exited) {
                        e = insert(p, c->pid);
                        e->born_ns = time;
                } else
                        e->gen = p->next_gen++;
                e->need_maps = false;
                e->need_comm = false;
                e->seen_ns = MAX(e->seen_ns, time);
        }
        mark_thread(p, c->pid, c->tid, e ? e->gen : 0, time);
        name_thread(p, c->pid, c->tid, c->comm, time);
}

/* Tell the oldest waiting exit gone (unless a FORK took its pid since). */
static void gone_pop(struct proc_table *p) {
        uint32_t pid = p->gone[p->gone_head].pid;

        p->gone_head = (p->gone_head + 1) % PROC_TABLE_GONE_PENDING;
        p->n_gone--;
        if (pid == 0)
                return;
        p->st.gone++;
        task_event(p, &(struct source_task) { .kind = SOURCE_TASK_GONE, .pid = pid, .tid = pid });
}

/* A new process took pid: what is kept under it is the new one's, nothing of it is gone. */
static void gone_cancel(struct proc_table *p, uint32_t pid) {
        for (size_t i = 0; i < p->n_gone; i++) {
                struct gone_pending *g = &p->gone[(p->gone_head + i) % PROC_TABLE_GONE_PENDING];

                if (g->pid == pid)
                        g->pid = 0;
        }
}

void proc_table_task(struct proc_table *p, const struct perf_data_task *t) {
        bool fork = t->rec.type == PERF_RECORD_FORK;
        struct proc_entry *e;

        p->now_ns = MAX(p->now_ns, t->time);
        if (fork && t->pid == t->tid)
                gone_cancel(p, t->pid);
        if (fork) {
                struct thread_entry *th = thread_slot(p, t->tid);
                /*
                 * The rings of two CPUs are read one after the other, so a
                 * FORK may come after what followed it on another CPU: the
                 * child's COMM at exec, its first sample. What is newer than
                 * the fork stays: the thread keeps its name, the process its
                 * entry (born after the fork: this very process).
                 */
                bool named_since = th->used && th->tid == t->tid && th->pid == t->pid && th->named_ns >= t->time;

                if (named_since)
                        task_map_set_pid(p->tasks, t->tid, t->pid);
                else
                        task_map_fork(p->tasks, t->pid, t->tid, t->ptid, t->time);
                e = find(p, t->pid);
                if (t->pid != t->ppid && e && e->born_ns >= t->time) {
                        if (e->ppid == SOURCE_NO_ID)
                                e->ppid = t->ppid;
                } else if (t->pid != t->ppid) {
                        /* A new process: the parent's mappings, which the kernel does not report again. */
                        e = insert(p, t->pid);
                        e->ppid = t->ppid;
                        e->born_ns = e->seen_ns = t->time;
                }
                /* A new thread has its parent thread's name (task_map_fork()) until a COMM. */
                if (e && !named_since)
                        mark_thread(p, t->pid, t->tid, e->gen, t->time);
        } else if (t->pid == t->tid && t->pid != 0 && t->pid != SOURCE_NO_ID) {
                e = find(p, t->pid);
                if (e) {
                        e->exited = true;
                        e->exit_ns = t->time;
                }
                /* Every process's, met or not: its consumers may hold its mappings all the same. */
                if (p->n_gone == PROC_TABLE_GONE_PENDING) {
                        p->st.gone_early++;
                        gone_pop(p);
                }
                p->gone[(p->gone_head + p->n_gone++) % PROC_TABLE_GONE_PENDING] =
                        (struct gone_pending) { t->pid, p->ticks };
        }
        task_event(p, &(struct source_task) {
                .kind = fork ? SOURCE_TASK_FORK : SOURCE_TASK_EXIT,
                .pid = t->pid,
                .tid = t->tid,
                .ppid = t->ppid,
                .ptid = t->ptid,
                .time_ns = t->time,
        });
}

void proc_table_mapping(struct proc_table *p, const struct perf_data_mmap *m) {
        if (!p->sink->mapping)
                return;
        p->sink->mapping(p->sink->userdata, &(struct source_mapping) {
                .pid = m->pid,
                .start = m->addr,
                .len = m->len,
                .pgoff = m->pgoff,
                .filename = m->filename,
                .build_id = m->has_build_id && m->build_id_size > 0 ? m->build_id : NULL,
                .build_id_len = m->has_build_id ? m->build_id_size : 0,
                /* perf_event_open(2): MMAP2 of a mapping without PROT_EXEC, sent with attr.mmap_data. */
                .data = (m->rec.misc & PERF_RECORD_MISC_MMAP_DATA) != 0,
        });
}

void proc_table_cgroup(struct proc_table *p, const struct perf_data_cgroup *c) {
        /* A cgroup was created: its id and path, no task (the sample id is the task that made it). */
        task_event(p, &(struct source_task) {
                .kind = SOURCE_TASK_CGROUP,
                .pid = SOURCE_NO_ID,
                .tid = SOURCE_NO_ID,
                .time_ns = (c->rec.sid.valid & PERF_DATA_ID_TIME) ? c->rec.sid.time : 0,
                .cgroup_id = c->id,
                .cgroup_path = c->path,
        });
}

void proc_table_lost(struct proc_table *p) {
        p->losses++;
}

void proc_table_age(struct proc_table *p) {
        /* Exits read before the last call: this drain read every ring past them. */
        while (p->n_gone > 0 && p->gone[p->gone_head].tick < p->ticks)
                gone_pop(p);
        p->ticks++;
        for (size_t s = 0; s < PROC_TABLE_SETS; s++)
                for (size_t w = 0; w < PROC_TABLE_WAYS; w++) {
                        struct proc_entry *e = &p->procs[s][w];

                        if (e->used && e->exited && p->now_ns > e->exit_ns &&
                            p->now_ns - e->exit_ns > PROC_TABLE_EXITED_NS) {
                                drop(p, e);
                                p->st.aged_out++;
                        }
                }
}

void proc_table_stats(const struct proc_table *p, struct proc_table_stats *ret) {
        *ret = p->st;
}
