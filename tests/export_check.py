#!/usr/bin/env python3
"""`dtrexec export`: a zoo model's training step as a Checkmate-layout graph.
Checks the graph's shape (unique names, links forward in time, forward nodes
named after the ONNX nodes, backward nodes after them), that its node count
matches the calls of the step, and that the simulator and the planners read
it. Usage: export_check.py DTREXEC"""
import json
import os
import subprocess
import sys
import tempfile

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    dtrexec = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "..", "bench", "models", "make.py"), "resnet18", "--tiny",
                        "-o", model], check=True, capture_output=True)
        graph = os.path.join(tmp, "g.json")
        res = subprocess.run([dtrexec, "export", model, "--train", "-o", graph], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        g = json.load(open(graph))
        nodes, links = g["nodes"], g["links"]
        names = [n["name"] for n in nodes]
        assert len(set(names)) == len(names), "node names are not unique"
        assert [n["id"] for n in nodes] == list(range(len(nodes)))
        onnx_names = {n.name for n in onnx.load(model).graph.node}
        forward = [n for n in nodes if not n["backward"]]
        assert {n["name"] for n in forward} - {"loss"} <= onnx_names, "forward nodes must be the ONNX nodes"
        assert onnx_names <= {n["name"] for n in forward}, "every ONNX node of the step is a forward node"
        first_backward = min(n["id"] for n in nodes if n["backward"])
        assert all(n["id"] < first_backward for n in forward), "backward nodes come after the forward pass"
        for n in nodes:
            if n["backward"]:
                base = n["name"].split("/grad")[0]
                assert base in names, f"{n['name']} names no forward node"
            assert n["cost_ram"] >= 0 and n["cost_cpu"] >= 0 and n["cost_flops"] >= 0
        assert all(l["source"] < l["target"] for l in links), "links must point forward in execution order"
        res = subprocess.run([dtrexec, "sim", graph, "--budget", "1.0", "--json"], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        rep = json.loads(res.stdout)
        assert rep["overhead"] == 1.0 and rep["remats"] == 0, rep
        print(f"PASS: {len(nodes)} nodes ({len(forward)} forward), {len(links)} links; the simulator replays it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
