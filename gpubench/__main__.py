from gpubench.cli import main

main()
