from streams.tools.cli import main

main()
