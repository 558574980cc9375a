"""CursorView: the strip after individual, contiguous and batch-index acks."""

from __future__ import annotations

from pulsarlab.widgets import CursorView, WhatIf
from pulsarlab.widgets.cursor import CELL_STATES


def _shared(**settings):
    whatif = WhatIf("Shared", **settings)
    view = CursorView(whatif)
    whatif.add_consumer("B")
    return whatif, view


def test_acking_entry_4_of_6_leaves_one_hole():
    whatif, view = _shared()
    positions = whatif.publish(count=6)
    whatif.receive("B")
    whatif.ack("B", [positions[3]])
    summary = view.summary()
    assert summary["holes"] == 1
    assert summary["individually_acked"] == 1
    assert summary["backlog"] == 5
    assert summary["mark_delete"] == f"{positions[0][0]}:-1"
    assert [state for _, state in view.strip] == [
        "delivered, unacked", "delivered, unacked", "delivered, unacked",
        "individually acked", "delivered, unacked", "delivered, unacked",
    ]
    assert list(view.fig.data[0].z[0]) == [3.5, 3.5, 3.5, 1.5, 3.5, 3.5]


def test_contiguous_acks_move_the_mark_delete_and_the_lines():
    whatif, view = _shared()
    positions = whatif.publish(count=6)
    whatif.receive("B", 4)
    whatif.ack("B", positions[:3])
    summary = view.summary()
    assert summary["mark_delete"] == "{}:{}".format(*positions[2])
    assert summary["holes"] == 0
    assert summary["delivered_unacked"] == 3  # entry 4 received, 5 and 6 prefetched
    assert summary["backlog"] == 3
    mark_delete_line, read_line = view.fig.layout.shapes
    assert mark_delete_line.x0 == 2.5  # right after entry 3
    assert read_line.x0 == 5.5  # everything was read (prefetched)


def test_unread_entries_sit_after_the_read_position():
    whatif = WhatIf("Shared", receiver_queue_size=2)
    view = CursorView(whatif)
    whatif.add_consumer("B")
    whatif.publish(count=5)
    assert [s for _, s in view.strip].count("unread") == 3
    assert view.summary()["read_position"].endswith(":2")


def test_batch_index_acks_show_a_partly_acked_batch():
    whatif, view = _shared(acknowledgment_at_batch_index_level_enabled=True)
    whatif.batch_index_ack = True
    whatif.remove_consumer("B")
    whatif.add_consumer("B")
    [batch] = whatif.publish(count=1, batch=4)
    whatif.receive("B")
    whatif.ack("B", [batch], batch_indexes={batch: [0, 2]})
    assert view.summary()["partial_batches"] == 1
    assert view.batch_bits == {batch: 0b1010}
    assert view.strip[0][1] == CELL_STATES[2]
    assert "indexes still unacked: [1, 3]" in view.fig.data[0].hovertext[0][0]
    whatif.ack("B", [batch], batch_indexes={batch: [1, 3]})
    assert view.summary()["partial_batches"] == 0
    assert view.strip[0][1] == "acked"


def test_entries_of_a_departed_consumer_await_redelivery():
    whatif, view = _shared()
    whatif.publish(count=3)
    whatif.remove_consumer("B")  # nobody left to take B's unacked entries
    assert [s for _, s in view.strip] == ["read, awaiting redelivery"] * 3
    whatif.add_consumer("C")
    assert [s for _, s in view.strip] == ["delivered, unacked"] * 3


def test_line_labels_at_the_ends_of_the_strip_hang_inside_it():
    whatif, view = _shared()
    positions = whatif.publish(count=12)
    whatif.receive("B")
    whatif.ack("B", [positions[3]])
    mark_delete, read = view.fig.layout.annotations
    assert (mark_delete.text, mark_delete.x, mark_delete.xanchor) == ("mark-delete", -0.5, "left")
    assert (read.text, read.x, read.xanchor) == ("read", 11.5, "right")
    picture = view.picture()
    assert "text-anchor='start' fill='#1b5e20'" in picture
    assert "text-anchor='end' fill='#0d47a1'" in picture
    whatif.ack("B", positions[:6])
    assert view.fig.layout.annotations[0].xanchor == "center"  # after entry 6 of 12


def test_the_legend_keys_every_state_and_the_change_marker_and_the_axis_names_entries():
    """The picture had state words without colours and no key for the red squares, and its
    axis counted 0..9 where the text names six entries."""
    whatif = WhatIf("Shared")
    view = CursorView(whatif)
    whatif.add_consumer("B")
    positions = whatif.publish(count=6)
    whatif.receive("B")
    whatif.ack("B", [positions[3]])
    keyed = [t.name for t in view.fig.data if t.meta == "legend"]
    assert keyed == ["changed in this step", *CELL_STATES]
    assert list(view.fig.layout.xaxis.ticktext) == [f"{ledger}:{entry}"
                                                    for ledger, entry in positions]
    svg = view.picture()
    for name in keyed:
        assert f">{name}<" in svg.replace("&#x27;", "'"), name
    assert ">0:5<" in svg and ">0:6<" not in svg


def test_compaction_marks_the_entries_it_left_out_and_its_horizon():
    whatif = WhatIf("Exclusive")
    view = CursorView(whatif)
    positions = whatif.publish(["A", "B", "A", "C"])
    positions += whatif.publish(["B"], payload=b"")  # a tombstone: B is gone
    assert view.horizon is None and "compaction_horizon" not in view.summary()
    assert not view.fig.data[2].x  # nothing to mark, no legend entry
    whatif.compact()
    summary = view.summary()
    assert summary["compaction_horizon"] == "{}:{}".format(*positions[-1])
    assert summary["compacted_out"] == 3 and summary["partly_compacted_batches"] == 0
    assert view.compacted_out == [positions[0], positions[1], positions[4]]
    # the picture: a cross on each, a dashed line after the horizon, the hover says why
    assert list(view.fig.data[2].x) == [0, 1, 4] and view.fig.data[2].showlegend
    horizon_line = view.fig.layout.shapes[0]
    assert (horizon_line.x0, horizon_line.line.dash) == (4.5, "dash")
    hover = view.fig.data[0].hovertext[0]
    assert "read_compacted reader skips it" in hover[0]
    assert "read_compacted" not in hover[2]
    assert "compaction horizon" in view.table.value
    picture = view.picture()  # the static picture draws them too
    assert "left out by compaction" in picture and "stroke-dasharray" in picture
    # the cursor's own states are untouched: nothing was acknowledged
    assert {state for _, state in view.strip} == {"unread"}


def test_a_batch_compaction_rebuilt_is_marked_with_the_indexes_it_left_out():
    whatif = WhatIf("Exclusive")
    view = CursorView(whatif)
    batch = whatif.publish_batch(["A", "B", "C"])
    whatif.publish(["A", "C"])  # supersede two of the batch's three messages
    whatif.compact()
    assert view.compacted_out_batches == {batch: 0b101}
    assert view.summary()["partly_compacted_batches"] == 1
    assert view.compacted_out == []  # the batch stays, rebuilt
    assert list(view.fig.data[3].x) == [0] and view.fig.data[3].showlegend
    assert "compaction left out its messages [0, 2]" in view.fig.data[0].hovertext[0][0]
    whatif.publish(["B"], payload=b"")  # its last message tombstoned: the batch goes
    whatif.compact()
    assert view.compacted_out_batches == {} and view.compacted_out[0] == batch
