"""Research: run a scenario outside the model's domain (refusals switched off in this
process) and print the packet comparison. Usage: python beyond.py tfolab-run-args..."""
import sys
from tfolab.model import domain, simulation
domain.refusal = lambda *a, **k: None
simulation.left_domain = lambda world: None
from tfolab.cli import main
sys.exit(main(sys.argv[1:]))
