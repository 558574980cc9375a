"""REST: ``terminate`` and ``terminate/partitions`` with Pulsar's answers and status codes."""

from __future__ import annotations

BASE = "/admin/v2/persistent/public/default"


def test_terminate_answers_the_last_message_id(rest):
    assert rest.put(f"{BASE}/to-end").status == 204
    empty = rest.post(f"{BASE}/to-end/terminate")
    assert empty.status == 200
    end = empty.json
    assert end["entryId"] == -1 and end["partitionIndex"] == -1
    assert rest.post(f"{BASE}/to-end/terminate").json == end  # again: the same id
    last = rest.get(f"{BASE}/to-end/lastMessageId").json
    assert (last["ledgerId"], last["entryId"]) == (end["ledgerId"], end["entryId"])
    assert rest.get(f"{BASE}/to-end/internalStats").json["state"] == "Terminated"


def test_terminate_refusals(rest):
    missing = rest.post(f"{BASE}/never-made/terminate")
    assert missing.status == 404 and "not found" in missing.reason
    assert rest.put(f"{BASE}/parts/partitions", 2).status == 204
    partitioned = rest.post(f"{BASE}/parts/terminate")
    assert partitioned.status == 405
    assert partitioned.reason == "Termination of a partitioned topic is not allowed"
    assert rest.put(f"{BASE}/single").status == 204
    single = rest.post(f"{BASE}/single/terminate/partitions")
    assert single.status == 405 and "please use terminate commands" in single.reason
    np = rest.post("/admin/v2/non-persistent/public/default/np/terminate")
    assert np.status == 405


def test_terminate_partitions_answers_each_partition(rest):
    assert rest.put(f"{BASE}/ends/partitions", 3).status == 204
    answer = rest.post(f"{BASE}/ends/terminate/partitions")
    assert answer.status == 200
    assert sorted(answer.json) == ["0", "1", "2"]
    assert all(mid["entryId"] == -1 for mid in answer.json.values())
    one = rest.post(f"{BASE}/ends-partition-1/terminate")
    assert one.status == 200 and one.json == answer.json["1"]
