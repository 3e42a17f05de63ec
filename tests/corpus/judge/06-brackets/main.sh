read -r t
for ((q = 0; q < t; q++)); do
    read -r s
    stack=()
    top=0
    ok=1
    for ((i = 0; i < ${#s} && ok; i++)); do
        c=${s:i:1}
        case $c in
            '(' | '[' | '{') stack[top++]=$c ;;
            *)
                case $c in
                    ')') want='(' ;;
                    ']') want='[' ;;
                    *) want='{' ;;
                esac
                if ((top == 0)) || [[ ${stack[top - 1]} != "$want" ]]; then
                    ok=0
                else
                    ((top--))
                fi
                ;;
        esac
    done
    if ((ok && top == 0)); then echo YES; else echo NO; fi
done
