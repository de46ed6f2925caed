"""An upload's line that gives a key twice is refused naming the member, the line and the key: the
upload is read by the data layer's JSON reader (rueval.data.reading.parse_json), which never lets one
of the two values win silently."""

import pytest
from board_support import zip_of

from rueval.core.errors import RuevalError
from rueval.serve.upload import check_submission


def test_an_uploaded_line_giving_its_label_twice_is_refused_naming_line_and_key(gold):
    lines = [f'{{"idx": {e.idx}, "label": 0}}' for e in gold.tasks["parus"].examples]
    lines[1] = f'{{"idx": {gold.tasks["parus"].examples[1].idx}, "label": 0, "label": 1}}'
    with pytest.raises(RuevalError) as caught:
        check_submission(zip_of({"PARus.jsonl": "\n".join(lines) + "\n"}), gold)
    assert str(caught.value).endswith("PARus.jsonl:2: field 'label': given twice in one object")
