"""KeyHeap: the smallest key first, ties in push order, keys taken when an item is pushed;
OrderedHeap: the same by a comparison asked as items are pushed and popped."""

from __future__ import annotations

from scheduler.framework.ordering import KeyHeap, OrderedHeap


def drain(heap: KeyHeap[str]) -> list[str]:
    out = []
    while heap:
        out.append(heap.pop())
    return out


def test_the_smallest_key_comes_first_and_ties_keep_push_order() -> None:
    keys = {"a": 2, "b": 1, "c": 2, "d": 0}
    heap = KeyHeap(keys.__getitem__, ["c", "b", "a"])
    heap.push("d")
    assert len(heap) == 4
    assert drain(heap) == ["d", "b", "c", "a"]  # c and a tie: c was pushed first


def test_an_item_pushed_back_takes_its_new_place() -> None:
    share = {"q1": 0.1, "q2": 0.5}
    heap = KeyHeap(share.__getitem__, ["q1", "q2"])
    first = heap.pop()
    share[first] = 0.9  # q1 was served: its share grew
    heap.push(first)
    assert drain(heap) == ["q2", "q1"]


def test_items_pushed_between_pops_interleave_with_those_it_was_built_with() -> None:
    # Built with a run of items (sorted once) and pushed more as it is drained: every pop
    # still takes the smallest key of all, ties going to the item given first.
    keys = {"a": 1, "b": 3, "c": 5, "d": 2, "e": 3, "f": 6, "g": 0}
    heap = KeyHeap(keys.__getitem__, ["c", "a", "b"])
    assert heap.pop() == "a"
    heap.push("d")
    heap.push("e")  # ties with b, which came first
    assert heap.pop() == "d"
    assert heap.pop() == "b"
    heap.push("g")
    heap.push("f")
    assert len(heap) == 4
    assert drain(heap) == ["g", "e", "c", "f"]
    assert not heap


def by_rank(rank: dict[str, int]) -> OrderedHeap[str]:
    def compare(a: str, b: str) -> int:
        return rank[a] - rank[b]

    return OrderedHeap(compare)


def test_the_comparison_decides_and_ties_keep_push_order() -> None:
    rank = {"low": 3, "high": 1, "mid-a": 2, "mid-b": 2}
    heap = by_rank(rank)
    for name in ("low", "mid-a", "high", "mid-b"):
        heap.push(name)
    assert len(heap) == 4
    popped = []
    while heap:
        popped.append(heap.pop())
    assert popped == ["high", "mid-a", "mid-b", "low"]  # mid-a was pushed before mid-b


def test_a_queue_pushed_back_is_placed_by_the_comparison_of_now() -> None:
    rank = {"q1": 1, "q2": 2}
    heap = by_rank(rank)
    heap.push("q1")
    heap.push("q2")
    served = heap.pop()
    rank[served] = 5  # its share grew past q2's
    heap.push(served)
    assert [heap.pop(), heap.pop()] == ["q2", "q1"]
    assert not heap
