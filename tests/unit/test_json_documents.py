"""A JSON document read element by element keeps what lies around its elements (inputs/json_array.py): the
pieces put back together are the text, whatever its layout; the output's sink lays its values out with them."""
import io
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_pipeline.inputs.json_array import ARRAY, OBJECT, DocumentLayout, read_elements, values_in
from hermes_pipeline.inputs.jsonl import BOM, Unparsed
from hermes_pipeline.run.output_tree import DocumentSink
from testkit.env import examples

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=4)),
                      max_leaves=12)
space = st.sampled_from(["", " ", "\n", "\n  ", "\r\n\t", "\n\n    "])
indent = st.sampled_from([None, 0, 1, 2, 4, "\t"])


def pieces(text: bytes) -> tuple[list, DocumentLayout]:
    layout = DocumentLayout()
    return list(read_elements(io.BytesIO(text), "doc.json", 1 << 20, layout)), layout


def put_together(elements: list, layout: DocumentLayout) -> bytes:
    out = layout.opening
    for index, element in enumerate(elements):
        out += (layout.separators[index - 1] if index else b"") + element.raw
    return out + layout.closing


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=6), values, max_size=4), max_size=6), indent,
       st.lists(space, min_size=4, max_size=4), st.booleans())
def test_an_arrays_pieces_put_back_together_are_its_text(records, element_indent, spaces, bom):
    before, after_open, around_comma, after = spaces
    elements = [json.dumps(r, indent=element_indent) for r in records]
    text = (BOM if bom else b"") + f"{before}[{after_open}{(around_comma + ',' + around_comma).join(elements)}" \
        f"{around_comma}]{after}".encode()
    items, layout = pieces(text)
    assert all(isinstance(i, Unparsed) for i in items) and [i.raw.decode() for i in items] == elements
    assert layout.kind == ARRAY
    if records:
        assert put_together(items, layout) == text
        assert list(values_in(b"\n".join(i.raw for i in items) + b"\n")) == [i.raw for i in items]


@given(st.dictionaries(st.text(max_size=6), values, max_size=5), indent, space, space)
@settings(max_examples=examples(60), deadline=None)
def test_one_objects_pieces_put_back_together_are_its_text(record, element_indent, before, after):
    text = f"{before}{json.dumps(record, indent=element_indent)}{after}".encode()
    items, layout = pieces(text)
    assert layout.kind == OBJECT and len(items) == 1 and put_together(items, layout) == text


def test_a_document_cut_short_is_still_written_as_a_whole_array(tmp_path):
    """The reader stops at the break (the rest is one quarantine entry): what was read is written, closed."""
    items, layout = pieces(b'[\n    {"a": 1},\n    {"b": [\n        2\n    ]},\n    {"c": ')
    assert [type(i).__name__ for i in items] == ["Unparsed", "Unparsed", "Rejected"] and layout.closing is None
    sink = DocumentSink(tmp_path / "out.json", keep_partial=False, compression=None, layout=layout)
    sink.write(items[0].raw + b"\n")
    sink.write(b'{"b":[2],"compacted":true}\n{"extra":"value"}\n')     # more values than the input had
    assert sink.finish(complete=True) > 0
    out = (tmp_path / "out.json").read_bytes()
    assert out == b'[\n    {"a": 1},\n    {"b":[2],"compacted":true},\n    {"extra":"value"}\n]\n'
    assert json.loads(out)[0] == {"a": 1}
