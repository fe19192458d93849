from bot.cli.entry import main

main()
