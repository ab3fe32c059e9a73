"""The typed run spec (domain/agent_start.Start) is the wire's: the assignments answer's bytes, and so its ETag, are
those the control plane sent when a run spec was a dict, and an agent decodes what that control plane sent.

BODIES were captured from main at 83b1b94 (the dict-built run spec, projections/assignments.py as it was there),
for the placements of run_spec_cases.py."""

from __future__ import annotations

import msgspec
import pytest

from api.agent.starts import build_spec, decode_assignments
from domain.agent_protocol import Assignments, Start
from tests.unit.agent.run_spec_cases import CASES

BODIES = {
    'job_as_owner': (
        b'{"start":[{"allocation_id":"68c7884b-e88b-515b-9280-292acf836b9c","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train[2]","job":"train","task_id":2,"kind":"task","ima'
        b'ge":"docker://alpine:3.20","script":"#!/bin/sh\\necho hi","command":null,"args":null,"env":{"A":"'
        b'1","B":"two","FB_TASK_ID":"2"},"cwd":"/tmp","files":{},"execute_timeout_seconds":600.0,"memory_b'
        b'ytes":1073741824,"cpu_cores":2,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0'
        b'ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,"ports":[],"mounts":{},"uid":100000,'
        b'"gid":200000,"groups":[200000,200001],"username":"alice"},{"allocation_id":"ef9c5b12-4199-53d7-8'
        b'8fd-530cb0aa8a83","epoch":1,"workflow_id":"d0be8cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train['
        b'1]","job":"train","task_id":1,"kind":"task","image":"docker://alpine:3.20","script":"#!/bin/sh\\n'
        b'echo hi","command":null,"args":null,"env":{"A":"1","B":"two","FB_TASK_ID":"1"},"cwd":"/tmp","fil'
        b'es":{},"execute_timeout_seconds":600.0,"memory_bytes":1073741824,"cpu_cores":2,"account_id":"08b'
        b'b1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readiness_'
        b'probe":null,"ports":[],"mounts":{},"uid":100000,"gid":200000,"groups":[200000,200001],"username"'
        b':"alice"}],"stop":[],"volumes":[]}'
    ),
    'job_owner_in_no_group': (
        b'{"start":[{"allocation_id":"ef9c5b12-4199-53d7-88fd-530cb0aa8a83","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train[1]","job":"train","task_id":1,"kind":"task","ima'
        b'ge":"docker://alpine:3.20","script":"#!/bin/sh\\necho hi","command":null,"args":null,"env":{"A":"'
        b'1","B":"two","FB_TASK_ID":"1"},"cwd":"/tmp","files":{},"execute_timeout_seconds":600.0,"memory_b'
        b'ytes":1073741824,"cpu_cores":2,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0'
        b'ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,"ports":[],"mounts":{},"uid":100001,'
        b'"gid":100001,"groups":[],"username":"bob"}],"stop":[],"volumes":[]}'
    ),
    'job_owner_without_uid': (
        b'{"start":[{"allocation_id":"68c7884b-e88b-515b-9280-292acf836b9c","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train[2]","job":"train","task_id":2,"kind":"task","ima'
        b'ge":"docker://alpine:3.20","script":"#!/bin/sh\\necho hi","command":null,"args":null,"env":{"A":"'
        b'1","B":"two","FB_TASK_ID":"2"},"cwd":"/tmp","files":{},"execute_timeout_seconds":600.0,"memory_b'
        b'ytes":1073741824,"cpu_cores":2,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0'
        b'ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,"ports":[],"mounts":{}}],"stop":[],"'
        b'volumes":[]}'
    ),
    'multinode_rank': (
        b'{"start":[{"allocation_id":"28da5516-2219-5594-bfb8-8a3e3cded56c","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train","job":"train","task_id":null,"kind":"job","imag'
        b'e":"docker://alpine:3.20","script":"#!/bin/sh\\nmpirun hostname","command":null,"args":null,"env"'
        b':{},"cwd":null,"files":{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account'
        b'_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","r'
        b'eadiness_probe":null,"ports":[],"mounts":{},"peers":{"rank":0,"hosts":["10.0.0.1","10.0.0.2"],"p'
        b'ort":30360,"procs_per_node":4,"implementation":"openmpi"}}],"stop":[],"volumes":[]}'
    ),
    'service_restarted': (
        b'{"start":[{"allocation_id":"ca15c4e0-daf6-53d4-b936-16a22b45d114","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"web","job":"web","task_id":null,"kind":"service","imag'
        b'e":"docker://nginx:1","script":null,"command":["nginx"],"args":["-g","daemon off"],"env":{},"cwd'
        b'":null,"files":{"/etc/app.cfg":"port=8080","/etc/motd":"hello"},"execute_timeout_seconds":null,"'
        b'memory_bytes":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0e'
        b'e0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":{"http-get":{"port":8080,"path":"/ready"},'
        b'"period-seconds":2},"ports":[{"name":"http","port":8080,"protocol":"tcp"},{"name":"dns","port":5'
        b'3,"protocol":"udp"}],"mounts":{},"start_delay_seconds":2.0,"liveness_probe":{"tcp-socket":{"port'
        b'":8080},"failure-threshold":3}}],"stop":[],"volumes":[]}'
    ),
    'service_first': (
        b'{"start":[{"allocation_id":"0a0470e9-2f5f-5ab4-a5b6-f2e3a708c54e","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"web","job":"web","task_id":null,"kind":"service","imag'
        b'e":"docker://nginx:1","script":null,"command":["nginx"],"args":["-g","daemon off"],"env":{},"cwd'
        b'":null,"files":{"/etc/app.cfg":"port=8080","/etc/motd":"hello"},"execute_timeout_seconds":null,"'
        b'memory_bytes":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0e'
        b'e0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":{"http-get":{"port":8080,"path":"/ready"},'
        b'"period-seconds":2},"ports":[{"name":"http","port":8080,"protocol":"tcp"},{"name":"dns","port":5'
        b'3,"protocol":"udp"}],"mounts":{},"liveness_probe":{"tcp-socket":{"port":8080},"failure-threshold'
        b'":3}}],"stop":[],"volumes":[]}'
    ),
    'image_build': (
        b'{"start":[{"allocation_id":"9eb78c29-f40f-513b-8dd3-7b32f529c77a","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"build:tools","job":"build:tools","task_id":null,"kind"'
        b':"build","image":"docker://alpine:3.20","script":null,"command":null,"args":null,"env":{},"cwd":'
        b'null,"files":{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account_id":"08bb'
        b'1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readiness_p'
        b'robe":null,"ports":[],"mounts":{},"image_owner":"0ee0489f-f295-51d5-b90b-d4675fe00332","image_gr'
        b'oup":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","build":{"name":"tools","source":"docker://alpine:3.'
        b'20","post":"touch /opt/t","scope":"group","digest":"a5bab846596bec556641a1dc58e90a765c0300c2a683'
        b'31dbadf7c483e2dc5f42"}}],"stop":[],"volumes":[]}'
    ),
    'job_in_built_image': (
        b'{"start":[{"allocation_id":"48b7b92c-24db-545e-9952-9461eb012787","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"use","job":"use","task_id":null,"kind":"job","image":"'
        b'fuzzball://user/tools","script":null,"command":["/opt/t"],"args":null,"env":{},"cwd":null,"files'
        b'":{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5'
        b'd20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,'
        b'"ports":[],"mounts":{},"image_owner":"0ee0489f-f295-51d5-b90b-d4675fe00332","image_group":"08bb1'
        b'712-b6d9-5d20-a99d-1d120bec7d3f"},{"allocation_id":"9eb78c29-f40f-513b-8dd3-7b32f529c77a","epoch'
        b'":1,"workflow_id":"d0be8cf6-bf16-55d8-879c-a625d3c0d21e","stage":"build:tools","job":"build:tool'
        b's","task_id":null,"kind":"build","image":"docker://alpine:3.20","script":null,"command":null,"ar'
        b'gs":null,"env":{},"cwd":null,"files":{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cor'
        b'es":1,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4'
        b'675fe00332","readiness_probe":null,"ports":[],"mounts":{},"image_owner":"0ee0489f-f295-51d5-b90b'
        b'-d4675fe00332","image_group":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","build":{"name":"tools","sou'
        b'rce":"docker://alpine:3.20","post":"touch /opt/t","scope":"group","digest":"a5bab846596bec556641'
        b'a1dc58e90a765c0300c2a68331dbadf7c483e2dc5f42"}}],"stop":[],"volumes":[]}'
    ),
    'gpu_private_network_hooks': (
        b'{"start":[{"allocation_id":"94fbd16c-25ef-5651-8938-059e116148f0","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"gpu","job":"gpu","task_id":null,"kind":"job","image":"'
        b'docker://cuda:12","script":null,"command":["nvidia-smi"],"args":null,"env":{},"cwd":null,"files"'
        b':{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5d'
        b'20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,"'
        b'ports":[],"mounts":{},"hooks":[{"when":"pre","source":"job","script":"echo before","timeout_seco'
        b'nds":30.0},{"when":"post","source":"job","script":"echo after","timeout_seconds":30.0}],"devices'
        b'":{"nvidia.com/gpu":2},"network_isolated":true}],"stop":[],"volumes":[]}'
    ),
    'ingress': (
        b'{"start":[{"allocation_id":"9d25a866-e502-5a7d-9e0e-3596f86d229f","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"ingress:data","job":"ingress:data","task_id":null,"kin'
        b'd":"ingress","image":"","script":null,"command":null,"args":null,"env":{"ROVING_TRANSFER_SECRET_'
        b'0":"secret://user/s3"},"cwd":null,"files":{},"execute_timeout_seconds":null,"memory_bytes":0,"cp'
        b'u_cores":1,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b9'
        b'0b-d4675fe00332","readiness_probe":null,"ports":[],"mounts":{},"volume":"data","transfers":[{"so'
        b'urce":"s3://bucket/genome.fa","destination":"file://inputs/genome.fa"}]}],"stop":[],"volumes":["'
        b'd0be8cf6-bf16-55d8-879c-a625d3c0d21e"]}'
    ),
    'second_replica': (
        b'{"start":[{"allocation_id":"3f110df2-e6d2-579b-8a0b-9875309722c6","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"model[2]","job":"model","task_id":2,"kind":"service","'
        b'image":"docker://alpine","script":"#!/bin/sh\\nserve","command":null,"args":null,"env":{"FB_TASK_'
        b'ID":"2","FB_PORT_HTTP":"8001"},"cwd":null,"files":{},"execute_timeout_seconds":null,"memory_byte'
        b's":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295'
        b'-51d5-b90b-d4675fe00332","readiness_probe":{"http-get":{"port":8001,"path":"/ready"}},"ports":[{'
        b'"name":"http","port":8001,"protocol":"tcp"}],"mounts":{},"liveness_probe":{"tcp-socket":{"port":'
        b'8001}}}],"stop":[],"volumes":[]}'
    ),
    'private_image': (
        b'{"start":[{"allocation_id":"28da5516-2219-5594-bfb8-8a3e3cded56c","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"train","job":"train","task_id":null,"kind":"job","imag'
        b'e":"docker://registry.example.org/team/trainer:2","script":"#!/bin/sh\\necho hi","command":null,"'
        b'args":null,"env":{"PLAIN":"1","ROVING_IMAGE_SECRET":"secret://user/registry"},"cwd":null,"files"'
        b':{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account_id":"08bb1712-b6d9-5d'
        b'20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readiness_probe":null,"'
        b'ports":[],"mounts":{}}],"stop":[],"volumes":[]}'
    ),
    'persistent_volume': (
        b'{"start":[{"allocation_id":"a71b15fa-d6c5-599c-9f3c-6a427d83c1e6","epoch":1,"workflow_id":"d0be8'
        b'cf6-bf16-55d8-879c-a625d3c0d21e","stage":"write","job":"write","task_id":null,"kind":"job","imag'
        b'e":"docker://alpine","script":"#!/bin/sh\\ndate > hot/stamp","command":null,"args":null,"env":{},'
        b'"cwd":null,"files":{},"execute_timeout_seconds":null,"memory_bytes":0,"cpu_cores":1,"account_id"'
        b':"08bb1712-b6d9-5d20-a99d-1d120bec7d3f","owner_id":"0ee0489f-f295-51d5-b90b-d4675fe00332","readi'
        b'ness_probe":null,"ports":[],"mounts":{"/hot":"hot"},"persistent":{"hot":{"path":"/srv/v/org/user'
        b'/100000/hot","uid":100000,"gid":100000,"mode":448}}}],"stop":[],"volumes":[]}'
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_answer_is_byte_for_byte_what_the_dict_built_run_spec_gave(case):
    assert msgspec.json.encode(CASES[case]()) == BODIES[case]


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_agent_decodes_what_the_dict_built_run_spec_sent_into_the_same_typed_answer(case):
    """An agent of this version against a control plane of the previous one: every run spec decodes and builds."""
    answer, refused = decode_assignments(BODIES[case])
    assert refused == [] and answer == msgspec.json.decode(BODIES[case], type=Assignments[Start])
    assert msgspec.json.encode(answer) == BODIES[case]
    for start in answer.start:
        assert build_spec(start) == start  # the agent runs the Start as sent, under its names


def test_what_the_agent_runs_carries_each_case_s_own_fields():
    by_case = {case: [build_spec(s) for s in decode_assignments(BODIES[case])[0].start] for case in CASES}
    [first, second] = by_case["job_as_owner"]
    assert (first.uid, first.gid, first.groups, first.username) == (100000, 200000, [200000, 200001], "alice")
    assert (first.task_id, first.env, first.execute_timeout_seconds, first.cpu_cores) == (
        2, {"A": "1", "B": "two", "FB_TASK_ID": "2"}, 600.0, 2)
    [loner] = by_case["job_owner_in_no_group"]
    assert (loner.uid, loner.groups) == (100001, [])
    [rank] = by_case["multinode_rank"]
    assert rank.peers is not None and (rank.peers.rank, rank.peers.hosts) == (0, ("10.0.0.1", "10.0.0.2"))
    [web] = by_case["service_restarted"]
    assert (web.start_delay_seconds, web.readiness_probe.http_get.path, web.liveness_probe.failure_threshold) == (
        2.0, "/ready", 3)
    assert msgspec.to_builtins(web.ports) == [{"name": "http", "port": 8080, "protocol": "tcp"}, {"name": "dns", "port": 53,
                                                                            "protocol": "udp"}]
    [build] = by_case["image_build"]
    assert (build.kind, build.build and build.build.scope, build.image_group) == (
        "build", "group", "08bb1712-b6d9-5d20-a99d-1d120bec7d3f")
    [gpu] = by_case["gpu_private_network_hooks"]
    assert (gpu.devices, gpu.network_isolated, [h.when for h in gpu.hooks]) == (
        {"nvidia.com/gpu": 2}, True, ["pre", "post"])
    [ingress] = by_case["ingress"]
    assert (ingress.volume, ingress.transfers[0].source, ingress.env) == (
        "data", "s3://bucket/genome.fa", {"ROVING_TRANSFER_SECRET_0": "secret://user/s3"})
    [persistent] = by_case["persistent_volume"]
    assert (persistent.mounts, persistent.persistent["hot"].mode) == ({"/hot": "hot"}, 0o700)
