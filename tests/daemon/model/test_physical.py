"""Physical IDs from each layout's evidence, on real captures."""

from __future__ import annotations

from npumon.daemon.model.chips import ChipResults
from npumon.daemon.model.physical import PhysicalId, physical_ids
from npumon.daemon.parsers.mapping import parse_mapping
from npumon.daemon.parsers.table import parse_info
from tests.support import FIXTURES

NPU_SMI = FIXTURES / "npu-smi"


def test_the_a3_table_prints_the_physical_id() -> None:
    table = parse_info((NPU_SMI / "info_a3_ascend910_phyid_proc.txt").read_text())
    ids = physical_ids(ChipResults(table=table))
    assert ids[(1, 0)] == PhysicalId(2, "table") and ids[(1, 1)] == PhysicalId(3, "table")
    assert {p.evidence for p in ids.values()} == {"table"}


def test_without_a_physical_column_the_logic_id_of_m_stands_in() -> None:
    table = parse_info((NPU_SMI / "info_910b4-1_2chip_procs_25.2.2.txt").read_text())
    mapping_files = sorted(NPU_SMI.glob("info_m_910*"))
    assert mapping_files, "a 910 -m capture"
    mapping = parse_mapping(mapping_files[0].read_text())
    ids = physical_ids(ChipResults(table=table, mapping=mapping))
    by_key = {(m.npu, m.chip): m.logic_id for m in mapping.chips}
    assert ids and set(ids) <= set(by_key)
    for key, found in ids.items():
        assert found == PhysicalId(by_key[key], "logic_id")  # type: ignore[arg-type]


def test_no_table_no_ids() -> None:
    assert physical_ids(ChipResults()) == {}
