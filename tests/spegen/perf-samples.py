# SPDX-License-Identifier: GPL-2.0-or-later
#
# perf script -s helper: one CSV row per synthesized sample, for the
# spe-oracle tests, which compare them field by field with the truth.
# Runs inside perf's embedded Python.

import sys


def trace_begin():
    print("event,cpu,pid,tid,time,ip,symbol,addr,phys_addr,weight,data_src,comm")


def process_event(param_dict):
    s = param_dict["sample"]
    sym = param_dict.get("symbol") or ""
    print("%s,%d,%d,%d,%d,0x%x,%s,0x%x,0x%x,%d,0x%x,%s" % (
        param_dict.get("ev_name", ""), s["cpu"], s["pid"], s["tid"], s["time"],
        s["ip"], sym, s.get("addr", 0), s.get("phys_addr", 0), s.get("weight", 0),
        s.get("datasrc", 0), param_dict.get("comm", "")))


def trace_end():
    sys.stdout.flush()
