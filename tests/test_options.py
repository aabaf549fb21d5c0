import pytest

from gpubench import options
from gpubench.errors import GpubenchError


def test_lists_parse_and_deduplicate():
    assert options.sizes("512, 1024,512") == (512, 1024)
    assert options.block_sizes("8,16,24,32") == (8, 16, 24, 32)
    assert options.mnk("1000,1500,777") == (1000, 1500, 777)
    assert options.mnk("64,64,64") == (64, 64, 64)
    assert options.names("a, b") == ["a", "b"] and options.names(None) is None
    with pytest.raises(GpubenchError, match="--variants is empty"):
        options.names(" , ")


@pytest.mark.parametrize("call,text", [(options.sizes, "1.5"), (options.sizes, "-1"), (options.block_sizes, "64"),
                                       (options.strides, "0"), (options.mnk, "1,2,3,4"), (options.mnk, "1,,3"),
                                       (options.sizes, "٣"), (options.sizes, "512,²"), (options.block_sizes, "１６"),
                                       (options.mnk, "1,2,٣"), (options.sizes, "9" * 5000)])
def test_bad_values(call, text):
    with pytest.raises(GpubenchError):
        call(text)


def test_padding_takes_ascii_digits_only():
    from gpubench.problems import resolve_padding

    assert resolve_padding("3", 8, 3, 1) == 3
    with pytest.raises(GpubenchError, match="padding '٣' is not allowed"):
        resolve_padding("٣", 8, 3, 1)
