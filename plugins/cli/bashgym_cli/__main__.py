from bashgym_cli import main

main()
