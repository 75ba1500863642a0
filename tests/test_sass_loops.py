"""benchmarks/sass_loops.py: the plane loop found in nvdisasm's text, its instructions counted
by opcode (a canned listing: no nvcc or nvdisasm needed)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import sass_loops  # noqa: E402

LISTING = """
        .text._Z4copyPf:
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*0010*/                   S2R R0, SR_TID.X ;
.L_x_1:
        /*0020*/                   LDS R2, [R0] ;
        /*0030*/                   FFMA R3, R2, R2, R3 ;
        /*0040*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0050*/               @P0 BRA `(.L_x_1) ;
        /*0060*/                   EXIT ;
        .text._Z23Nest_section2IiLi16ELi32EEvPKf:
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_7:
        /*0010*/                   LDS.64 R2, [R0] ;
.L_x_8:
        /*0020*/                   FADD R4, R2, R3 ;
        /*0030*/                   FFMA R5, R4, R4, R5 ;
        /*0040*/               @P1 BRA `(.L_x_8) ;
        /*0050*/                   STS [R0], R5 ;
        /*0060*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0070*/                   UMOV UR4, UR5 ;
        /*0080*/               @P0 BRA `(.L_x_7) ;
        /*0090*/                   EXIT ;
"""


def test_the_widest_loop_around_the_last_barrier_of_the_function_is_counted():
    count, ops = sass_loops.loop_counts(LISTING, "section2IiLi16ELi32E")
    # from .L_x_7 to its backward branch: the inner loop's instructions once, by opcode
    assert count == 8
    assert ops == {"LDS": 1, "FADD": 1, "FFMA": 1, "BRA": 2, "STS": 1, "BAR": 1, "UMOV": 1}
    assert sass_loops.loop_counts(LISTING, "copy") == (4, {"LDS": 1, "FFMA": 1, "BAR": 1,
                                                            "BRA": 1})


def test_a_function_without_a_barrier_or_absent_is_an_error():
    no_barrier = LISTING.replace("BAR.SYNC.DEFER_BLOCKING 0x0", "NOP")
    with pytest.raises(ValueError, match="no barrier"):
        sass_loops.loop_counts(no_barrier, "copy")
    with pytest.raises(ValueError, match="no function"):
        sass_loops.loop_counts(LISTING, "section9")


def test_threads_of_each_kind_follow_the_fusion():
    class F:
        pair, bands = 2, ((4, 3), (4, 4))
    assert sass_loops.threads(F, (16, 32)) == [256, 112, 64]
